package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/trainer/eval"
	"github.com/dualforce/dualforce/trainer/metrics"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// skillColors tell skills apart (Okabe-Ito, colour-blind safe); the reference is drawn black.
var skillColors = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
}

// pngOf renders plots side by side (one row) into PNG bytes.
func pngOf(width, height vg.Length, plots ...*plot.Plot) ([]byte, error) {
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(18), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return encodePNG(img)
}

func encodePNG(img *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: png: %w", err)
	}
	return buf.Bytes(), nil
}

// returnsFigure is the bar chart of every subject's return.
func returnsFigure(res *eval.Result) ([]byte, error) {
	p, err := eval.ReturnsPlot(res)
	if err != nil {
		return nil, err
	}
	return pngOf(vg.Length(max(8, 2+0.5*float64(len(res.Subjects))))*vg.Inch, 4.5*vg.Inch, p)
}

// distanceFigure is the SF distance heat map of the shown subjects, the reference as row 1.
func distanceFigure(res *eval.Result) ([]byte, error) {
	sub := subset(res, shown(res))
	side := vg.Length(max(6, 2.5+0.45*float64(len(sub.Subjects)))) * vg.Inch
	return pngOf(side, side, eval.DistancePlot(sub))
}

// Projection is a 2-D principal-component projection of successor features.
type Projection struct {
	Points [][2]float64
	// Explained is the share of the total variance along each axis.
	Explained [2]float64
}

// pca projects the rows of x onto their first two principal components (centred; a missing
// second component, with one feature or identical points, projects to 0).
func pca(x [][]float64) Projection {
	n, d := len(x), len(x[0])
	centred := mat.NewDense(n, d, nil)
	for j := range d {
		mean := 0.0
		for i := range n {
			mean += x[i][j] / float64(n)
		}
		for i := range n {
			centred.Set(i, j, x[i][j]-mean)
		}
	}
	out := Projection{Points: make([][2]float64, n)}
	var svd mat.SVD
	if !svd.Factorize(centred, mat.SVDThin) {
		return out
	}
	var u mat.Dense
	svd.UTo(&u)
	sv := svd.Values(nil)
	total := 0.0
	for _, s := range sv {
		total += s * s
	}
	// Identical points leave only rounding noise: no direction explains anything.
	if total <= 1e-24*float64(n*d) {
		return out
	}
	for k := 0; k < 2 && k < len(sv); k++ {
		if total > 0 {
			out.Explained[k] = sv[k] * sv[k] / total
		}
		for i := range n {
			out.Points[i][k] = u.At(i, k) * sv[k]
		}
	}
	return out
}

// projectionFigure is the PCA scatter of the shown subjects' online SFs, coloured by skill.
func projectionFigure(res *eval.Result) ([]byte, error) {
	idx := shown(res)
	if len(idx) < 2 {
		return nil, nil
	}
	x := make([][]float64, len(idx))
	for a, i := range idx {
		x[a] = res.Subjects[i].Psi
	}
	proj := pca(x)
	if proj.Explained[0] == 0 {
		return nil, nil // every point the same: nothing to project
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("PCA of online successor features (PC1 %.0f%%, PC2 %.0f%% of variance)", 100*proj.Explained[0], 100*proj.Explained[1])
	p.X.Label.Text, p.Y.Label.Text = "PC1", "PC2"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	ref := reference(res)
	groups := map[int]plotter.XYs{}
	var refXY plotter.XYs
	var labels plotter.XYLabels
	for a, i := range idx {
		xy := plotter.XY{X: proj.Points[a][0], Y: proj.Points[a][1]}
		if i == ref {
			refXY = append(refXY, xy)
		} else {
			groups[res.Subjects[i].Skill] = append(groups[res.Subjects[i].Skill], xy)
		}
		labels.XYs = append(labels.XYs, xy)
		labels.Labels = append(labels.Labels, res.Subjects[i].Label)
	}
	if refXY != nil {
		sc, err := plotter.NewScatter(refXY)
		if err != nil {
			return nil, fmt.Errorf("report: projection: %w", err)
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Radius, sc.GlyphStyle.Color = draw.PyramidGlyph{}, vg.Points(6), color.Black
		p.Add(sc)
		p.Legend.Add(res.Subjects[ref].Label, sc)
	}
	for _, skill := range slices.Sorted(maps.Keys(groups)) {
		sc, err := plotter.NewScatter(groups[skill])
		if err != nil {
			return nil, fmt.Errorf("report: projection: %w", err)
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = draw.CircleGlyph{}, vg.Points(4)
		sc.GlyphStyle.Color = skillColors[skill%len(skillColors)]
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("skill %d", skill), sc)
	}
	// Head room above the points for the legend.
	p.Y.Max += 0.3 * max(p.Y.Max-p.Y.Min, 1e-9)
	if len(idx) <= maxPointLabels {
		if l, err := plotter.NewLabels(labels); err == nil {
			for i := range l.TextStyle {
				l.TextStyle[i].Font.Size = vg.Points(7)
			}
			l.Offset = vg.Point{X: vg.Points(5)}
			p.Add(l)
		}
	}
	return pngOf(7*vg.Inch, 6*vg.Inch, p)
}

// maxPointLabels is the most points a scatter labels with their names.
const maxPointLabels = 24

// maxPathPoints bounds the segments drawn per path.
const maxPathPoints = 200

// maxPanelPaths bounds the paths drawn in one trace panel.
const maxPanelPaths = 40

// tracesFigure draws the kept base paths seen from above, one panel per skill (the reference
// first), of every evaluated latent, passing the filter or not (how failing skills move is
// part of the answer), at most maxPanelPaths per panel, over the evaluation's world, every
// segment coloured by the base height on a shared colour bar. Nil when no path was kept.
func tracesFigure(res *eval.Result) ([]byte, error) {
	idx := shownFirst(res)
	ref := reference(res)
	type panel struct {
		title string
		paths []*eval.Path
		seed  uint64
	}
	var panels []*panel
	bySkill := map[int]*panel{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, i := range idx {
		s := &res.Subjects[i]
		var pn *panel
		switch {
		case i == ref:
			pn = &panel{title: s.Label}
			panels = append([]*panel{pn}, panels...)
		case bySkill[s.Skill] != nil:
			pn = bySkill[s.Skill]
		default:
			pn = &panel{title: fmt.Sprintf("skill %d", s.Skill)}
			bySkill[s.Skill] = pn
			panels = append(panels, pn)
		}
		for k := range s.Rollouts {
			if p := s.Rollouts[k].Path; p != nil && len(p.X) > 1 && len(pn.paths) < maxPanelPaths {
				if len(pn.paths) == 0 {
					pn.seed = s.Rollouts[k].Seed
				}
				pn.paths = append(pn.paths, p)
				for _, h := range p.Height {
					lo, hi = min(lo, h), max(hi, h)
				}
			}
		}
	}
	panels = slices.DeleteFunc(panels, func(p *panel) bool { return len(p.paths) == 0 })
	if len(panels) == 0 {
		return nil, nil
	}
	if hi-lo < 0.01 {
		lo, hi = lo-0.005, hi+0.005
	}
	cmap := moreland.SmoothBlueRed()
	cmap.SetMin(lo)
	cmap.SetMax(hi)
	scenario, scenarioErr := worlds.Builtin(res.World)
	plots := make([]*plot.Plot, len(panels))
	for n, pn := range panels {
		title := fmt.Sprintf("%s: %d paths", pn.title, len(pn.paths))
		var p *plot.Plot
		if scenarioErr == nil {
			var err error
			if p, err = worlds.TopDown(scenario.Layout(pn.seed), nil, title); err != nil {
				return nil, fmt.Errorf("report: traces: %w", err)
			}
		} else {
			p = plot.New()
			p.Title.Text = title
			p.X.Label.Text, p.Y.Label.Text = "x (m)", "y (m)"
			p.Add(plotter.NewGrid())
		}
		for _, path := range pn.paths {
			if err := addHeightPath(p, path, cmap); err != nil {
				return nil, err
			}
		}
		plots[n] = p
	}
	return gridWithColorBar(plots, cmap, "base height (m)")
}

// addHeightPath draws path as segments coloured by the height at their start.
func addHeightPath(p *plot.Plot, path *eval.Path, cmap palette.ColorMap) error {
	step := max(1, (len(path.X)+maxPathPoints-1)/maxPathPoints)
	for k := 0; k < len(path.X)-1; k += step {
		end := min(k+step, len(path.X)-1)
		seg, err := plotter.NewLine(plotter.XYs{{X: path.X[k], Y: path.Y[k]}, {X: path.X[end], Y: path.Y[end]}})
		if err != nil {
			return fmt.Errorf("report: traces: %w", err)
		}
		c, err := cmap.At(min(max(path.Height[k], cmap.Min()), cmap.Max()))
		if err != nil {
			return fmt.Errorf("report: traces: %w", err)
		}
		seg.Color, seg.Width = c, vg.Points(1.5)
		p.Add(seg)
	}
	return nil
}

// tracesPerRow is how many trace panels share a row.
const tracesPerRow = 3

// gridWithColorBar lays plots out in rows of tracesPerRow with a vertical colour bar on the right.
func gridWithColorBar(plots []*plot.Plot, cmap palette.ColorMap, label string) ([]byte, error) {
	const panel, barWidth = 4.5 * vg.Inch, 1.3 * vg.Inch
	cols := min(len(plots), tracesPerRow)
	rows := (len(plots) + cols - 1) / cols
	width, height := panel*vg.Length(cols)+barWidth, panel*vg.Length(rows)
	img := vgimg.New(width, height)
	dc := draw.New(img)
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range cols {
			if k := r*cols + c; k < len(plots) {
				grid[r][c] = plots[k]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	left := draw.Crop(dc, 0, -barWidth, 0, 0)
	canvases := plot.Align(grid, tiles, left)
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	bar := plot.New()
	bar.HideX()
	bar.Y.Label.Text = label
	bar.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
	barHeight := min(height, 5*vg.Inch)
	bar.Draw(draw.Crop(dc, width-barWidth+vg.Points(12), -vg.Points(18), height-barHeight+vg.Points(18), -vg.Points(18)))
	return encodePNG(img)
}

// indexed splits a metrics column such as "phi_2" into its group "phi" and index "2".
var indexed = regexp.MustCompile(`^(.+)_([0-9]+)$`)

// maxMetricPanels bounds the panels drawn per metrics log.
const maxMetricPanels = 24

// metricsFigure draws every numeric column of a log, one panel per column or per group of
// indexed columns (phi_0, phi_1, ... in one panel "phi"). It reports how many groups it left out.
func metricsFigure(l *Log) (png []byte, omitted int, err error) {
	type group struct {
		name  string
		lines []metrics.Line
	}
	var groups []*group
	byName := map[string]*group{}
	for _, col := range l.Columns {
		name, line := col, col
		if m := indexed.FindStringSubmatch(col); m != nil {
			name, line = m[1], m[2]
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.lines = append(g.lines, metrics.Line{Name: line, X: l.Series.Iteration, Y: l.Series.Values[col]})
	}
	if len(groups) == 0 {
		return nil, 0, nil
	}
	if len(groups) > maxMetricPanels {
		omitted = len(groups) - maxMetricPanels
		groups = groups[:maxMetricPanels]
	}
	panels := make([]metrics.Panel, len(groups))
	for i, g := range groups {
		lines := g.lines
		if len(lines) == 1 {
			lines[0].Name = "" // one curve needs no legend
		}
		slices.SortStableFunc(lines, func(a, b metrics.Line) int { return lineOrder(a.Name) - lineOrder(b.Name) })
		panels[i] = metrics.Panel{Title: g.name, YLabel: g.name, Lines: lines}
	}
	var buf bytes.Buffer
	if err := metrics.RenderPNG(&buf, "iteration", panels...); err != nil {
		return nil, 0, fmt.Errorf("report: %s: %w", l.Path, err)
	}
	return buf.Bytes(), omitted, nil
}

// lineOrder sorts indexed lines numerically (skill 10 after skill 9).
func lineOrder(name string) int {
	n, err := strconv.Atoi(name)
	if err != nil {
		return 0
	}
	return n
}
