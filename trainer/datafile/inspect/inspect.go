package inspect

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
)

// ModeSummary is one behaviour's share of an offline archive.
type ModeSummary struct {
	datafile.Mode
	MeanReward     float64
	MeanBaseHeight float64
	// MeanReturn and StdReturn (sample standard deviation) are over the mode's episodes: the
	// withheld reward summed from each episode start to its last transition.
	MeanReturn, StdReturn float64
}

// Range is the spread of a group of values.
type Range struct {
	Name                string
	Dims                int
	Min, Max, Mean, Std float64
	WidestDim           int // the dimension (within the group) with the largest spread
}

// Summary describes an offline archive.
type Summary struct {
	Task              string
	Layout            string
	ObsDim            int
	ActionScale       float32
	Kp, Kd            float64
	Transitions       int
	ExpertTransitions int
	Episodes          int
	Terminals         int
	Timeouts          int
	Modes             []ModeSummary
	Fields            []Range // one per observation field, then the actions
	SaturatedActions  int     // action entries at +-1
	World             string  // the generator's world, when it names one
}

// Summarize computes the summary of a validated offline archive.
func Summarize(o *datafile.Offline) *Summary {
	m := &o.Manifest
	d := &o.Data
	s := &Summary{
		Task: m.Task, Layout: m.Contract.Layout.Name, ObsDim: d.ObsDim,
		ActionScale: m.Contract.ActionScale, Kp: m.Contract.Kp, Kd: m.Contract.Kd,
		Transitions: d.Len(), ExpertTransitions: m.ExpertTransitions, World: m.World(),
	}
	for i := range d.Terminal {
		s.Terminals += b2i(d.Terminal[i])
		s.Timeouts += b2i(d.Timeout[i])
		s.Episodes += b2i(d.EpisodeStart[i])
	}
	rewards := make([]float64, len(m.Modes))
	heights := make([]float64, len(m.Modes))
	returns := make([][]float64, len(m.Modes))
	for i, md := range o.Withheld.Mode {
		r := float64(o.Withheld.Reward[i])
		rewards[md] += r
		heights[md] += float64(o.Withheld.BasePosition[3*i+2])
		if d.EpisodeStart[i] || len(returns[md]) == 0 {
			returns[md] = append(returns[md], 0)
		}
		returns[md][len(returns[md])-1] += r
	}
	for i, md := range m.Modes {
		ms := ModeSummary{Mode: md}
		if md.Transitions > 0 {
			ms.MeanReward = rewards[i] / float64(md.Transitions)
			ms.MeanBaseHeight = heights[i] / float64(md.Transitions)
			ms.MeanReturn, ms.StdReturn = stat.MeanStdDev(returns[i], nil)
			if len(returns[i]) < 2 {
				ms.StdReturn = 0 // one episode has no spread (gonum gives NaN)
			}
		}
		s.Modes = append(s.Modes, ms)
	}
	s.Fields = append(FieldRanges(m.Contract.Layout, d.Obs), spread("actions", d.Act, d.ActDim, 0, d.ActDim))
	for _, a := range d.Act {
		if math.Abs(float64(a)) >= 1 {
			s.SaturatedActions++
		}
	}
	return s
}

// FieldRanges is the range of every field of layout l over row-major observations obs.
func FieldRanges(l skills.Layout, obs []float32) []Range {
	var out []Range
	for _, f := range l.Fields {
		out = append(out, spread(f.Name, obs, l.Dim(), f.Offset, f.Dim))
	}
	return out
}

// WriteRanges prints ranges as an aligned table.
func WriteRanges(w io.Writer, ranges []Range) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "field\tdims\tmin\tmax\tmean\tstd\twidest dim")
	for _, f := range ranges {
		fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4g\t%.4g\t%.4g\t%d\n", f.Name, f.Dims, f.Min, f.Max, f.Mean, f.Std, f.WidestDim)
	}
	return tw.Flush()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// spread is the range of columns [off, off+dims) of a row-major matrix with cols columns.
func spread(name string, x []float32, cols, off, dims int) Range {
	r := Range{Name: name, Dims: dims, Min: math.Inf(1), Max: math.Inf(-1)}
	var sum, sq float64
	n := 0
	widest := -1.0
	for c := off; c < off+dims; c++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := c; i < len(x); i += cols {
			v := float64(x[i])
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			sum += v
			sq += v * v
			n++
		}
		r.Min, r.Max = math.Min(r.Min, lo), math.Max(r.Max, hi)
		if hi-lo > widest {
			widest, r.WidestDim = hi-lo, c-off
		}
	}
	if n > 0 {
		r.Mean = sum / float64(n)
		r.Std = math.Sqrt(math.Max(0, sq/float64(n)-r.Mean*r.Mean))
	}
	return r
}

// WriteText prints the summary as aligned tables.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "task %s, layout %s (%d dims), action scale %g, kp %g Nm/rad, kd %g Nm*s/rad\n", s.Task, s.Layout, s.ObsDim, s.ActionScale, s.Kp, s.Kd)
	fmt.Fprintf(tw, "%d transitions (%d expert) in %d episodes: %d end in a fall (terminal), %d in a timeout\n",
		s.Transitions, s.ExpertTransitions, s.Episodes, s.Terminals, s.Timeouts)
	fmt.Fprintln(tw, "NaN/Inf: none (every column checked on read)")
	routes := false
	for _, m := range s.Modes {
		routes = routes || len(m.Routes) > 0
	}
	header := "\nmode\texpert\ttransitions\tepisodes\tfalls\tgoal reached\tmean reward\tepisode return\tmean base height (m)"
	if routes {
		header += "\troutes past the box (left/right/over)"
	}
	fmt.Fprintln(tw, header)
	expertRoutes := map[string]int{}
	for _, m := range s.Modes {
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%d\t%.3f\t%.1f ± %.1f\t%.3f", m.Name, m.Expert, m.Transitions, m.Episodes, m.Falls, m.GoalReached, m.MeanReward, m.MeanReturn, m.StdReturn, m.MeanBaseHeight)
		if routes {
			fmt.Fprintf(tw, "\t%s", routeShares(m.Routes))
		}
		fmt.Fprintln(tw)
		for r, n := range m.Routes {
			if m.Expert {
				expertRoutes[r] += n
			}
		}
	}
	if routes {
		fmt.Fprintf(tw, "\nexpert episodes by route past the box: %s\n", routeShares(expertRoutes))
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := WriteRanges(w, s.Fields); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\naction entries at +-1: %d of %d\n", s.SaturatedActions, s.Transitions*12)
	return err
}

// routeNames are the ways past the navigation box, in print order.
var routeNames = [...]string{"left", "right", "over"}

// routeShares prints episode counts by route as "n (p%)" for left, right and over.
func routeShares(routes map[string]int) string {
	total := 0
	for _, n := range routes {
		total += n
	}
	if total == 0 {
		return "-"
	}
	out := ""
	for i, r := range routeNames {
		if i > 0 {
			out += " / "
		}
		out += fmt.Sprintf("%d (%.0f%%)", routes[r], 100*float64(routes[r])/float64(total))
	}
	return out
}
