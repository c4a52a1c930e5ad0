package metrics

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"github.com/dualforce/dualforce/skills"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Line is one named curve.
type Line struct {
	Name string
	X, Y []float64
}

// Panel is one plot of a figure: a title, a y-axis label and its curves.
type Panel struct {
	Title, YLabel string
	Lines         []Line
}

// maxPoints bounds the points drawn per curve: longer curves are thinned to
// bin means, which keeps a 100k-iteration run's figure quick to draw and
// readable.
const maxPoints = 2000

// palette is colour-blind safe (Okabe-Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
}

// WritePNG draws panels stacked vertically, sharing the x label, into a PNG
// at path (replaced atomically). Non-finite points are left out; a panel
// without any finite point says so instead of failing.
func WritePNG(path, xLabel string, panels ...Panel) error {
	return skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		if err := RenderPNG(w, xLabel, panels...); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// RenderPNG draws the figure of WritePNG to w.
func RenderPNG(w io.Writer, xLabel string, panels ...Panel) error {
	if len(panels) == 0 {
		return fmt.Errorf("metrics: figure has no panels")
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.Title
		p.X.Label.Text = xLabel
		p.Y.Label.Text = pn.YLabel
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		drawn := 0
		for j, l := range pn.Lines {
			xys := thin(l.X, l.Y)
			if len(xys) == 0 {
				continue
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("metrics: %s: %w", l.Name, err)
			}
			line.Color = palette[j%len(palette)]
			line.Width = vg.Points(1.2)
			p.Add(line)
			if l.Name != "" {
				p.Legend.Add(l.Name, line)
			}
			drawn++
		}
		if drawn == 0 {
			p.Title.Text += " (no finite values)"
		}
		plots[i] = []*plot.Plot{p}
	}
	const width, panelHeight = 8 * vg.Inch, 3.2 * vg.Inch
	img := vgimg.New(width, panelHeight*vg.Length(len(panels)))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// thin returns the finite points of (x, y), averaged over equal bins of
// consecutive points when there are more than maxPoints.
func thin(x, y []float64) plotter.XYs {
	n := min(len(x), len(y))
	per := (n + maxPoints - 1) / maxPoints
	var out plotter.XYs
	for start := 0; start < n; start += max(per, 1) {
		var sx, sy float64
		k := 0
		for i := start; i < min(start+per, n); i++ {
			if math.IsNaN(y[i]) || math.IsInf(y[i], 0) || math.IsNaN(x[i]) || math.IsInf(x[i], 0) {
				continue
			}
			sx += x[i]
			sy += y[i]
			k++
		}
		if k > 0 {
			out = append(out, plotter.XY{X: sx / float64(k), Y: sy / float64(k)})
		}
	}
	return out
}
