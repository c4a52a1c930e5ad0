package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/dualforce/dualforce/trainer/eval"
)

// reference is the index of the result's filter reference (the SMODICE-expert), -1 without one.
func reference(res *eval.Result) int {
	if res.FilterReference == nil {
		return -1
	}
	return *res.FilterReference
}

// passing lists the latents that pass the filter, the reference excepted; every latent when
// the result was not filtered.
func passing(res *eval.Result) []int {
	ref := reference(res)
	var out []int
	for i, s := range res.Subjects {
		if i != ref && (s.Passed == nil || *s.Passed) {
			out = append(out, i)
		}
	}
	return out
}

// shown lists the subjects of the diversity figures: the reference first, then the latents that
// pass the filter (the paper filters before it plots distances).
func shown(res *eval.Result) []int {
	var out []int
	if ref := reference(res); ref >= 0 {
		out = append(out, ref)
	}
	return append(out, passing(res)...)
}

// subset is the result restricted to the subjects idx, in that order, distances included.
func subset(res *eval.Result, idx []int) *eval.Result {
	out := *res
	out.Subjects = make([]eval.Summary, len(idx))
	out.Distances = make([][]float64, len(idx))
	out.FilterReference = nil
	for a, i := range idx {
		out.Subjects[a] = res.Subjects[i]
		out.Distances[a] = make([]float64, len(idx))
		for b, j := range idx {
			out.Distances[a][b] = res.Distances[i][j]
		}
	}
	return &out
}

// modeOrder is the order behaviour modes are listed in.
var modeOrder = []string{eval.TagLow, eval.TagMiddle, eval.TagHigh, eval.TagLeft, eval.TagRight, eval.TagOver}

// Comparison is one run's row of the side-by-side table.
type Comparison struct {
	Run string
	// Latents evaluated (the reference excepted); Passing of them pass the filter (all when
	// Filtered is false).
	Latents, Passing int
	Filtered         bool
	// Modes are the distinct measured behaviour tags among the passing latents.
	Modes []string
	// MeanMinDistance is the mean over passing latents of the SF distance to the nearest other
	// passing latent (NaN with fewer than two).
	MeanMinDistance float64
	// MeanReturn and BestReturn over the passing latents (NaN without any); ExpertReturn the
	// reference's (NaN without one).
	MeanReturn, BestReturn, ExpertReturn float64
}

// Share is the fraction of evaluated latents that pass the filter.
func (c Comparison) Share() float64 {
	if c.Latents == 0 {
		return math.NaN()
	}
	return float64(c.Passing) / float64(c.Latents)
}

// Compare summarises one run's evaluation for the side-by-side table.
func Compare(name string, res *eval.Result) Comparison {
	ref := reference(res)
	pass := passing(res)
	c := Comparison{
		Run: name, Latents: len(res.Subjects), Passing: len(pass), Filtered: ref >= 0,
		MeanMinDistance: math.NaN(), MeanReturn: math.NaN(), BestReturn: math.NaN(), ExpertReturn: math.NaN(),
	}
	if ref >= 0 {
		c.Latents--
		c.ExpertReturn = res.Subjects[ref].MeanReturn
	}
	modes := map[string]bool{}
	sum, minSum := 0.0, 0.0
	for _, i := range pass {
		s := &res.Subjects[i]
		for _, t := range s.Measured {
			modes[t] = true
		}
		sum += s.MeanReturn
		if math.IsNaN(c.BestReturn) || s.MeanReturn > c.BestReturn {
			c.BestReturn = s.MeanReturn
		}
		nearest := math.Inf(1)
		for _, j := range pass {
			if j != i {
				nearest = min(nearest, res.Distances[i][j])
			}
		}
		minSum += nearest
	}
	if len(pass) > 0 {
		c.MeanReturn = sum / float64(len(pass))
	}
	if len(pass) > 1 {
		c.MeanMinDistance = minSum / float64(len(pass))
	}
	for _, m := range modeOrder {
		if modes[m] {
			c.Modes = append(c.Modes, m)
			delete(modes, m)
		}
	}
	var rest []string
	for m := range modes {
		rest = append(rest, m)
	}
	slices.Sort(rest)
	c.Modes = append(c.Modes, rest...)
	return c
}

// Robustness is the fence table of one run: the goal rate of every subject in the evaluation's
// world and in every other world it was run in.
type Robustness struct {
	Worlds []string
	Rows   []RobustnessRow
	// Best is, per world, the highest goal rate of any latent (the reference excepted).
	Best []float64
}

// RobustnessRow is one subject's goal rates, in the order of Robustness.Worlds.
type RobustnessRow struct {
	Label     string
	Reference bool
	Passed    *bool
	Rates     []float64 // NaN where the subject was not run in the world
}

// robustness builds the fence table, nil when the result holds no other worlds' goal rates.
func robustness(res *eval.Result) *Robustness {
	others := map[string]bool{}
	for _, s := range res.Subjects {
		for w := range s.WorldGoalRate {
			if w != res.World {
				others[w] = true
			}
		}
	}
	if len(others) == 0 {
		return nil
	}
	rb := &Robustness{Worlds: []string{res.World}}
	for w := range others {
		rb.Worlds = append(rb.Worlds, w)
	}
	slices.Sort(rb.Worlds[1:])
	rb.Best = make([]float64, len(rb.Worlds))
	for k := range rb.Best {
		rb.Best[k] = math.NaN()
	}
	ref := reference(res)
	order := shownFirst(res)
	for _, i := range order {
		s := &res.Subjects[i]
		row := RobustnessRow{Label: s.Label, Reference: i == ref, Passed: s.Passed, Rates: make([]float64, len(rb.Worlds))}
		for k, w := range rb.Worlds {
			rate, ok := s.WorldGoalRate[w]
			switch {
			case k == 0:
				rate, ok = s.GoalRate, true
			case !ok:
				rate = math.NaN()
			}
			row.Rates[k] = rate
			if ok && i != ref && !(rate <= rb.Best[k]) {
				rb.Best[k] = rate
			}
		}
		rb.Rows = append(rb.Rows, row)
	}
	return rb
}

// AfterSwitchTable is the goal rates after a switch of one run (eval --after-switch) beside the
// same latents' rates from the start in the matching world.
type AfterSwitchTable struct {
	Start int // the latent every run started with
	Rows  []AfterSwitchRow
}

// AfterSwitchRow is one latent's runs after a switch for one world.
type AfterSwitchRow struct {
	Label                string
	World                string
	Switches, Goal, Fell int
	Rate, FromStart      float64 // FromStart: NaN where the latent was not evaluated there
	BelowMin             bool    // too few switches to be written into a bank
}

// afterSwitch builds the table, nil when the result measured nothing after a switch.
func afterSwitch(res *eval.Result) *AfterSwitchTable {
	a := res.AfterSwitch
	if a == nil {
		return nil
	}
	t := &AfterSwitchTable{Start: a.Start}
	for _, r := range a.Rates {
		row := AfterSwitchRow{Label: fmt.Sprintf("latent %d", r.Latent), World: r.World, Switches: r.Switches, Goal: r.Goal, Fell: r.Fell,
			Rate: r.Rate(), FromStart: math.NaN(), BelowMin: r.Switches < eval.MinAfterSwitch}
		for i, s := range res.Subjects {
			if s.Latent != r.Latent || i == reference(res) { // the reference is another bank's
				continue
			}
			row.Label = fmt.Sprintf("%s (latent %d)", s.Label, r.Latent)
			if rate, ok := s.WorldGoalRate[r.World]; ok {
				row.FromStart = rate
			} else if r.World == res.World {
				row.FromStart = s.GoalRate
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// shownFirst lists every subject: the reference first, then the others in order.
func shownFirst(res *eval.Result) []int {
	ref := reference(res)
	var out []int
	if ref >= 0 {
		out = append(out, ref)
	}
	for i := range res.Subjects {
		if i != ref {
			out = append(out, i)
		}
	}
	return out
}
