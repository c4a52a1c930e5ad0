package inspect

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
)

// Plot layout.
const (
	heightBins       = 40
	tracesPerMode    = 4
	panelSize        = 6 * vg.Inch
	expertLineWidth  = 2
	otherLineWidth   = 1
	worldOutlineGrey = 120
)

// palette gives mode i of n a colour: hues spread around the wheel, the expert modes first.
func palette(i, n int) color.Color {
	h := float64(i) / float64(max(n, 1))
	r, g, b := hsv(h, 0.75, 0.85)
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

func hsv(h, s, v float64) (r, g, b uint8) {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var rf, gf, bf float64
	switch int(i) % 6 {
	case 0:
		rf, gf, bf = v, t, p
	case 1:
		rf, gf, bf = q, v, p
	case 2:
		rf, gf, bf = p, v, t
	case 3:
		rf, gf, bf = p, q, v
	case 4:
		rf, gf, bf = t, p, v
	default:
		rf, gf, bf = v, p, q
	}
	return uint8(255 * rf), uint8(255 * gf), uint8(255 * bf)
}

// heightPlot overlays one normalised base height histogram per mode.
func heightPlot(o *datafile.Offline) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "base height per mode"
	p.X.Label.Text = "base height (m)"
	p.Y.Label.Text = "fraction of the mode's transitions"
	pos := o.Withheld.BasePosition
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 2; i < len(pos); i += 3 {
		lo, hi = math.Min(lo, float64(pos[i])), math.Max(hi, float64(pos[i]))
	}
	if !(hi > lo) {
		hi = lo + 1e-3
	}
	// Two empty bins either side, so the outermost steps are drawn whole.
	pad := 2 * (hi - lo) / (heightBins - 4)
	lo, hi = lo-pad, hi+pad
	modes := o.Manifest.Modes
	counts := make([][]float64, len(modes))
	for m := range counts {
		counts[m] = make([]float64, heightBins)
	}
	width := (hi - lo) / heightBins
	for i, md := range o.Withheld.Mode {
		b := min(int((float64(pos[3*i+2])-lo)/width), heightBins-1)
		counts[md][b]++
	}
	for m, md := range modes {
		if md.Transitions == 0 {
			continue
		}
		xys := make(plotter.XYs, heightBins)
		for b := range xys {
			xys[b] = plotter.XY{X: lo + (float64(b)+0.5)*width, Y: counts[m][b] / float64(md.Transitions)}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.StepStyle = plotter.MidStep
		line.Color = palette(m, len(modes))
		line.Width = vg.Points(otherLineWidth)
		if md.Expert {
			line.Width = vg.Points(expertLineWidth)
		}
		p.Add(line)
		p.Legend.Add(md.Name, line)
	}
	p.Legend.Top = true
	return p, nil
}

// tracePlot draws the base path of the first few episodes of every mode from above, over the
// nominal (un-jittered) obstacles of the collection world.
func tracePlot(o *datafile.Offline, world string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("top-down traces (first %d episodes per mode)", tracesPerMode)
	p.X.Label.Text = "x (m)"
	p.Y.Label.Text = "y (m)"
	p.Add(plotter.NewGrid())
	if s, err := worlds.Builtin(world); err == nil && world != "" {
		if err := addWorld(p, s); err != nil {
			return nil, err
		}
	}
	modes := o.Manifest.Modes
	drawn := make([]int, len(modes))
	pos := o.Withheld.BasePosition
	starts := o.Data.EpisodeStart
	var minX, maxX, minY, maxY = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := 0; i < len(starts); {
		end := i + 1
		for end < len(starts) && !starts[end] {
			end++
		}
		m := o.Withheld.Mode[i]
		if drawn[m] < tracesPerMode {
			drawn[m]++
			xys := make(plotter.XYs, 0, end-i)
			for k := i; k < end; k++ {
				x, y := float64(pos[3*k]), float64(pos[3*k+1])
				xys = append(xys, plotter.XY{X: x, Y: y})
				minX, maxX, minY, maxY = math.Min(minX, x), math.Max(maxX, x), math.Min(minY, y), math.Max(maxY, y)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			line.Color = palette(int(m), len(modes))
			line.Width = vg.Points(otherLineWidth)
			if modes[m].Expert {
				line.Width = vg.Points(expertLineWidth)
			}
			p.Add(line)
			if drawn[m] == 1 {
				p.Legend.Add(modes[m].Name, line)
			}
		}
		i = end
	}
	// Equal scales on both axes so the paths keep their shape.
	if !math.IsInf(minX, 0) {
		cx, cy := (minX+maxX)/2, (minY+maxY)/2
		half := math.Max(maxX-minX, maxY-minY)/2 + 0.2
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = cx-half, cx+half, cy-half, cy+half
	}
	p.Legend.Top = true
	return p, nil
}

func addWorld(p *plot.Plot, s *worlds.Scenario) error {
	grey := color.Gray{Y: worldOutlineGrey}
	if b := s.Box; b != nil {
		x0, x1, y0, y1 := b.X-b.Length/2, b.X+b.Length/2, b.Y-b.Width/2, b.Y+b.Width/2
		box, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		if err != nil {
			return err
		}
		box.Color = grey
		p.Add(box)
	}
	if g := s.Goal; g != nil {
		disc := make(plotter.XYs, 48)
		for i := range disc {
			a := 2 * math.Pi * float64(i) / float64(len(disc))
			disc[i] = plotter.XY{X: g.X + g.Radius*math.Cos(a), Y: g.Y + g.Radius*math.Sin(a)}
		}
		goal, err := plotter.NewPolygon(disc)
		if err != nil {
			return err
		}
		goal.Color = color.NRGBA{R: 40, G: 160, B: 60, A: 90}
		p.Add(goal)
	}
	return nil
}

// EncodePNG renders the summary figure: base height histograms beside top-down traces.
func EncodePNG(o *datafile.Offline) ([]byte, error) {
	heights, err := heightPlot(o)
	if err != nil {
		return nil, fmt.Errorf("inspect: height plot: %w", err)
	}
	traces, err := tracePlot(o, o.Manifest.World())
	if err != nil {
		return nil, fmt.Errorf("inspect: trace plot: %w", err)
	}
	img := vgimg.New(2*panelSize, panelSize)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 8, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align([][]*plot.Plot{{heights, traces}}, tiles, dc)
	heights.Draw(canvases[0][0])
	traces.Draw(canvases[0][1])
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("inspect: render png: %w", err)
	}
	return buf.Bytes(), nil
}

// WritePNG renders EncodePNG and replaces file atomically (skills.WriteFileAtomic).
func WritePNG(file string, o *datafile.Offline) error {
	data, err := EncodePNG(o)
	if err != nil {
		return err
	}
	return skills.WriteFileAtomic(file, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err })
}
