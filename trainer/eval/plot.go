package eval

import (
	"fmt"
	"image/color"
	"io"

	"github.com/dualforce/dualforce/skills"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxCellLabels is the largest matrix whose heat-map cells are labelled with their values.
const maxCellLabels = 12

// WritePNG draws res into a PNG at path (replaced atomically): the mean task return of every
// subject with its standard deviation and fall rate, beside the heat map of the pairwise l2
// distances between their online successor features (row and column 1 is the first subject:
// the SMODICE-expert when one was given).
func WritePNG(path string, res *Result) error {
	if len(res.Subjects) == 0 {
		return fmt.Errorf("eval: nothing to plot")
	}
	returns, err := ReturnsPlot(res)
	if err != nil {
		return err
	}
	heat := DistancePlot(res)
	n := len(res.Subjects)
	width := vg.Length(max(10, 4+1.2*float64(n))) * vg.Inch
	img := vgimg.New(width, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{{returns, heat}}, tiles, dc)
	returns.Draw(canvases[0][0])
	heat.Draw(canvases[0][1])
	return skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}

// names labels the subjects for the axes.
func names(res *Result) []string {
	out := make([]string, len(res.Subjects))
	for i, s := range res.Subjects {
		out[i] = s.Label
	}
	return out
}

type returnBars struct{ res *Result }

func (b returnBars) Len() int                        { return len(b.res.Subjects) }
func (b returnBars) Value(i int) float64             { return b.res.Subjects[i].MeanReturn }
func (b returnBars) XY(i int) (float64, float64)     { return float64(i), b.Value(i) }
func (b returnBars) YError(i int) (float64, float64) { s := b.res.Subjects[i].StdReturn; return s, s }

// ReturnsPlot is the bar chart of every subject's mean task return (± std), with its fall rate
// under its name.
func ReturnsPlot(res *Result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s return, %d rollouts of %.0f s (mean ± std; fall rate)", res.Task, res.Rollouts, res.EpisodeSeconds)
	p.Y.Label.Text = "task return"
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewBarChart(returnBars{res}, vg.Points(18))
	if err != nil {
		return nil, fmt.Errorf("eval: plot: %w", err)
	}
	bars.Color = color.RGBA{0, 114, 178, 255}
	bars.LineStyle.Width = 0
	errs, err := plotter.NewYErrorBars(returnBars{res})
	if err != nil {
		return nil, fmt.Errorf("eval: plot: %w", err)
	}
	p.Add(bars, errs)
	labels := names(res)
	for i, s := range res.Subjects {
		labels[i] = fmt.Sprintf("%s\nfall %.0f%%", labels[i], 100*s.FallRate)
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	return p, nil
}

// distanceGrid is the distance matrix as a heat-map grid, row 0 at the top.
type distanceGrid struct{ d [][]float64 }

func (g distanceGrid) Dims() (c, r int)   { return len(g.d), len(g.d) }
func (g distanceGrid) Z(c, r int) float64 { return g.d[len(g.d)-1-r][c] }
func (g distanceGrid) X(c int) float64    { return float64(c) }
func (g distanceGrid) Y(r int) float64    { return float64(r) }

// DistancePlot is the heat map of res.Distances, row and column 1 the first subject, cells
// labelled with their values when there are at most 12 subjects.
func DistancePlot(res *Result) *plot.Plot {
	n := len(res.Distances)
	lo, hi := 0.0, 0.0
	for _, row := range res.Distances {
		for _, v := range row {
			hi = max(hi, v)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("online successor-feature l2 distances (max %.3g)", hi)
	if hi == lo {
		hi = lo + 1 // one subject, or identical ones: a flat map still needs a range
	}
	cmap := moreland.SmoothBlueRed()
	cmap.SetMin(lo)
	cmap.SetMax(hi)
	heat := plotter.NewHeatMap(distanceGrid{res.Distances}, cmap.Palette(64))
	heat.Min, heat.Max = lo, hi
	p.Add(heat)
	if n <= maxCellLabels {
		var xys plotter.XYs
		var text []string
		for r, row := range res.Distances {
			for c, v := range row {
				xys = append(xys, plotter.XY{X: float64(c), Y: float64(n - 1 - r)})
				text = append(text, fmt.Sprintf("%.2g", v))
			}
		}
		if labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text}); err == nil {
			for i := range labels.TextStyle {
				labels.TextStyle[i].XAlign, labels.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
			}
			p.Add(labels)
		}
	}
	rows := names(res)
	p.NominalX(rows...)
	reversed := make([]string, n)
	for i, s := range rows {
		reversed[n-1-i] = s
	}
	p.NominalY(reversed...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	return p
}
