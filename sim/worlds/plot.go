package worlds

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

	"github.com/dualforce/dualforce/skills"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point2 is a planar point (x, y) in the world frame, metres.
type Point2 [2]float64

var (
	boxColor   = color.RGBA{R: 160, G: 110, B: 60, A: 255}
	fenceColor = color.RGBA{R: 90, G: 90, B: 90, A: 255}
	goalColor  = color.RGBA{R: 40, G: 160, B: 60, A: 160}
	pathColor  = color.RGBA{R: 30, G: 80, B: 200, A: 255}
)

// TopDown draws a layout seen from above with the base path of an episode over it: boxes,
// fences, the goal disc, the start pose and the path. Axes are in metres at equal scale.
func TopDown(l *Layout, path []Point2, title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "x (m)"
	p.Y.Label.Text = "y (m)"
	p.Add(plotter.NewGrid())

	bounds := newBounds()
	for _, b := range l.Boxes {
		xys := plotter.XYs{
			{X: b.Center[0] - b.Half[0], Y: b.Center[1] - b.Half[1]},
			{X: b.Center[0] + b.Half[0], Y: b.Center[1] - b.Half[1]},
			{X: b.Center[0] + b.Half[0], Y: b.Center[1] + b.Half[1]},
			{X: b.Center[0] - b.Half[0], Y: b.Center[1] + b.Half[1]},
		}
		poly, err := plotter.NewPolygon(xys)
		if err != nil {
			return nil, fmt.Errorf("worlds: plot %s: %w", b.Name, err)
		}
		poly.Color = boxColor
		if b.Kind == KindFence {
			poly.Color = fenceColor
		}
		poly.LineStyle.Width = 0
		p.Add(poly)
		bounds.addXYs(xys)
	}
	if g := l.Goal; g != nil {
		disc := make(plotter.XYs, 48)
		for i := range disc {
			a := 2 * math.Pi * float64(i) / float64(len(disc))
			disc[i] = plotter.XY{X: g.X + g.Radius*math.Cos(a), Y: g.Y + g.Radius*math.Sin(a)}
		}
		poly, err := plotter.NewPolygon(disc)
		if err != nil {
			return nil, fmt.Errorf("worlds: plot goal: %w", err)
		}
		poly.Color = goalColor
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add("goal", poly)
		bounds.addXYs(disc)
	}
	// The start pose: a dot and a 0.2 m heading tick.
	s := l.Start
	heading := plotter.XYs{{X: s.X, Y: s.Y}, {X: s.X + 0.2*math.Cos(s.Yaw), Y: s.Y + 0.2*math.Sin(s.Yaw)}}
	tick, err := plotter.NewLine(heading)
	if err != nil {
		return nil, fmt.Errorf("worlds: plot start: %w", err)
	}
	tick.Width = vg.Points(2)
	dot, err := plotter.NewScatter(heading[:1])
	if err != nil {
		return nil, fmt.Errorf("worlds: plot start: %w", err)
	}
	dot.GlyphStyle.Shape = draw.CircleGlyph{}
	dot.GlyphStyle.Radius = vg.Points(4)
	p.Add(tick, dot)
	p.Legend.Add("start", dot)
	bounds.addXYs(heading)

	if len(path) > 0 {
		xys := make(plotter.XYs, 0, len(path))
		for _, pt := range path {
			if math.IsNaN(pt[0]) || math.IsNaN(pt[1]) || math.IsInf(pt[0], 0) || math.IsInf(pt[1], 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: pt[0], Y: pt[1]})
		}
		if len(xys) > 0 {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("worlds: plot path: %w", err)
			}
			line.Color = pathColor
			line.Width = vg.Points(1.5)
			p.Add(line)
			p.Legend.Add("base path", line)
			bounds.addXYs(xys)
		}
	}
	bounds.apply(p, 0.3)
	p.Legend.Top = true
	return p, nil
}

type bounds struct{ minX, maxX, minY, maxY float64 }

func newBounds() bounds {
	return bounds{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)}
}

func (b *bounds) addXYs(xys plotter.XYs) {
	for _, p := range xys {
		b.minX, b.maxX = math.Min(b.minX, p.X), math.Max(b.maxX, p.X)
		b.minY, b.maxY = math.Min(b.minY, p.Y), math.Max(b.maxY, p.Y)
	}
}

// apply sets equal-length axis ranges around everything drawn, so a square image keeps metres
// square.
func (b bounds) apply(p *plot.Plot, margin float64) {
	cx, cy := (b.minX+b.maxX)/2, (b.minY+b.maxY)/2
	half := math.Max(b.maxX-b.minX, b.maxY-b.minY)/2 + margin
	p.X.Min, p.X.Max = cx-half, cx+half
	p.Y.Min, p.Y.Max = cy-half, cy+half
}

// PNGSize is the side of the square top-down image.
const PNGSize = 6 * vg.Inch

// EncodeTopDownPNG renders TopDown as PNG bytes.
func EncodeTopDownPNG(l *Layout, path []Point2, title string) ([]byte, error) {
	p, err := TopDown(l, path, title)
	if err != nil {
		return nil, err
	}
	wt, err := p.WriterTo(PNGSize, PNGSize, "png")
	if err != nil {
		return nil, fmt.Errorf("worlds: render png: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("worlds: render png: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteTopDownPNG renders TopDown and replaces file atomically (temp file, fsync, rename).
func WriteTopDownPNG(file string, l *Layout, path []Point2, title string) error {
	data, err := EncodeTopDownPNG(l, path, title)
	if err != nil {
		return err
	}
	return skills.WriteFileAtomic(file, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err })
}
