package eval

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// AfterSwitchWorlds are the worlds the runs after a switch are measured in: the task's world
// and its fenced variants, every world the runtime's switcher ranks candidates for.
var AfterSwitchWorlds = append([]string{core.WorldObstacle}, FenceWorlds...)

// MinAfterSwitch is the fewest runs that switched to a latent for a world before its goal rate
// after a switch there is written into a bank: fewer say little, and a rate from the start
// then stands in (the switcher falls back to it).
const MinAfterSwitch = 5

// AfterSwitchRate is what the runs that switched to one latent, for what blocks in one world,
// measured.
type AfterSwitchRate struct {
	Latent int `json:"latent"`
	// World is the evaluation world matching what blocked the start latent when the runtime
	// switched (core.MatchingWorld, the switch's own report): the world whose rates the
	// switcher ranked by, not necessarily the one the run was in.
	World    string `json:"world"`
	Switches int    `json:"switches"` // runs whose first switch went to Latent for World
	Goal     int    `json:"goal"`     // of those, reached the goal after the switch
	Fell     int    `json:"fell"`     // of those, fell
}

// Rate is the share of the switched runs that reached the goal.
func (r AfterSwitchRate) Rate() float64 { return float64(r.Goal) / float64(r.Switches) }

// AfterSwitchResult is a measurement of goal rates after a switch (AfterSwitch).
type AfterSwitchResult struct {
	// Start is the latent every run started with: the one the runtime starts (Bank.Best).
	Start int `json:"start"`
	// Candidates are the latents measured; Worlds the worlds run; RolloutsPerPair the runs of
	// each candidate in each world.
	Candidates      []int    `json:"candidates"`
	Worlds          []string `json:"worlds"`
	RolloutsPerPair int      `json:"rollouts_per_pair"`
	// Rates, by candidate, then world, for every pair with at least one switched run.
	Rates []AfterSwitchRate `json:"rates"`
	// Runs is the cost of each world's runs.
	Runs []WorldRun `json:"-"`
}

// validate checks a result read back: latents and counts that make sense.
func (r *AfterSwitchResult) validate() error {
	if r.Start < 0 || r.RolloutsPerPair < 1 {
		return fmt.Errorf("after switch: start latent %d, %d rollouts per pair", r.Start, r.RolloutsPerPair)
	}
	for i, rate := range r.Rates {
		if rate.Latent < 0 || rate.World == "" || rate.Switches < 1 || rate.Goal < 0 || rate.Fell < 0 ||
			rate.Goal > rate.Switches || rate.Fell > rate.Switches {
			return fmt.Errorf("after switch: rate %d: %+v", i, rate)
		}
	}
	return nil
}

// AfterSwitch measures how the candidates do when the runtime switches to them: from where it
// switches (beside a fence, stuck in front of the box, mid-stride) rather than from the
// episode's start, where the goal rates of Evaluate and Robustness are measured. bank is an
// evaluated bank (WithOnlineResults: route tags, filter verdicts, goal rates); the start latent
// is the one the runtime starts with (Bank.Best), the candidates every other latent the
// runtime's switcher may take (a route tag, not filtered out), those on the start latent's
// route too: where the start latent stalls with no other route clear, the switcher tries
// another on its route, and that try is measured as any switch is. For every
// world of worldNames (fenced variants of cfg's world, as Robustness runs) and every candidate
// not on a side the world fences, cfg.Rollouts runs start the start latent with switching on,
// in a copy of the bank in which the candidate is the only other latent that passed the filter:
// when the start latent's way is blocked the runtime switches to the candidate, and the run
// says whether it then got to the goal. Runs that never switch (the
// start latent got through) measure nothing. Rollout k draws the same seed in every world and
// for every candidate, as in Evaluate.
func AfterSwitch(ctx context.Context, cfg Config, bank *skills.Bank, worldNames []string) (*AfterSwitchResult, error) {
	best, err := bank.Best()
	if err != nil {
		return nil, fmt.Errorf("%w: after switch: %w", ErrConfig, err)
	}
	world, err := cfg.scenario()
	if err != nil {
		return nil, err
	}
	start := best.Index
	measures := core.LatentMeasures(bank)
	out := &AfterSwitchResult{Start: start, Worlds: worldNames, RolloutsPerPair: cfg.Rollouts}
	for c := range bank.Latents {
		if c != start && measures.Route(c) != 0 && measures.Passed(c) {
			out.Candidates = append(out.Candidates, c)
		}
	}
	// Each world's runs: the candidates that could be switched to there.
	type worldRuns struct {
		name     string
		scenario *worlds.Scenario
		subjects []Subject
	}
	var runs []worldRuns
	total := 0
	for _, name := range worldNames {
		sc, err := FencedVariant(world, name)
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		fenced := fencedRoutes(sc)
		w := worldRuns{name: name, scenario: sc}
		for _, c := range out.Candidates {
			if measures.Route(c)&fenced == 0 {
				w.subjects = append(w.subjects, Subject{Label: fmt.Sprintf("%d then %d", start, c), Bank: onlyCandidate(bank, start, c), Latent: start})
			}
		}
		if len(w.subjects) > 0 {
			runs = append(runs, w)
			total += len(w.subjects) * cfg.Rollouts
		}
	}
	counts := afterSwitchCounts{}
	done := 0
	for _, w := range runs {
		run := cfg
		run.Scenario, run.Switching, run.Paths, run.Traces = w.scenario, true, 0, false
		run.Core = measuringSwitches(cfg.Core)
		if cfg.Progress != nil {
			run.Progress = func(n, _ int) { cfg.Progress(done+n, total) }
		}
		res, err := Evaluate(ctx, run, w.subjects)
		if err != nil {
			return out, fmt.Errorf("eval: after switch in %s: %w", w.name, err)
		}
		done += len(w.subjects) * cfg.Rollouts
		out.Runs = append(out.Runs, WorldRun{World: w.name, PolicySteps: res.PolicySteps, Ticks: res.Ticks, Seconds: res.Seconds})
		for i := range res.Subjects {
			counts.add(res.Subjects[i].Rollouts, float64(bank.Contract.PolicyHz))
		}
	}
	out.Rates = counts.rates()
	return out, nil
}

// measuringSwitches is the core's configuration for runs after a switch: the caller's
// adjustments, with keep_measured off. What is measured is the switch: a start latent kept
// at the fence measures nothing.
func measuringSwitches(adjust func(*core.Config)) func(*core.Config) {
	return func(c *core.Config) {
		if adjust != nil {
			adjust(c)
		}
		c.Switching.KeepMeasured = false
	}
}

// afterSwitchCounts tallies rollouts by the latent their first switch went to and the world
// matching what blocked then.
type afterSwitchCounts map[afterSwitchKey]*AfterSwitchRate

type afterSwitchKey struct {
	latent int
	world  string
}

// add counts the rollouts (of a policy at hz) that switched: whether they reached the goal
// after the switch, and whether they fell.
func (c afterSwitchCounts) add(rollouts []Rollout, hz float64) {
	for k := range rollouts {
		ro := &rollouts[k]
		if len(ro.Switches) == 0 {
			continue
		}
		sw := &ro.Switches[0]
		key := afterSwitchKey{sw.To, sw.World}
		r := c[key]
		if r == nil {
			r = &AfterSwitchRate{Latent: sw.To, World: sw.World}
			c[key] = r
		}
		r.Switches++
		// Transition k ends one policy period after state k: at (k+1)/hz s.
		if ro.GoalStep >= 0 && float64(ro.GoalStep+1)/hz >= sw.Time {
			r.Goal++
		}
		if ro.Fell {
			r.Fell++
		}
	}
}

// rates lists the counts by latent, then world in the order of AfterSwitchWorlds.
func (c afterSwitchCounts) rates() []AfterSwitchRate {
	out := make([]AfterSwitchRate, 0, len(c))
	for _, r := range c {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b AfterSwitchRate) int {
		if a.Latent != b.Latent {
			return a.Latent - b.Latent
		}
		return slices.Index(AfterSwitchWorlds, a.World) - slices.Index(AfterSwitchWorlds, b.World)
	})
	return out
}

// fencedRoutes are the ways round the box sc's fences close.
func fencedRoutes(sc *worlds.Scenario) corebus.Routes {
	var r corebus.Routes
	if f := sc.Fences; f != nil {
		if f.Left {
			r |= corebus.RouteLeft
		}
		if f.Right {
			r |= corebus.RouteRight
		}
	}
	return r
}

// onlyCandidate is a copy of b in which, of every latent but start, only candidate passed the
// filter: the one the runtime can switch to.
func onlyCandidate(b *skills.Bank, start, candidate int) *skills.Bank {
	out := *b
	out.Latents = slices.Clone(b.Latents)
	failed := false
	for i := range out.Latents {
		if i != start && i != candidate {
			out.Latents[i].Info.PassedFilter = &failed
		}
	}
	return &out
}

// WithAfterSwitchRates returns a copy of b whose latents carry res's goal rates after a switch
// (skills.AfterSwitchWorld of each rate's world) where at least MinAfterSwitch runs switched to
// them; every earlier rate after a switch is dropped (they were measured from another start, or
// another bank). b itself is not changed.
func WithAfterSwitchRates(b *skills.Bank, res *AfterSwitchResult) (*skills.Bank, error) {
	out := *b
	out.Latents = slices.Clone(b.Latents)
	for i := range out.Latents {
		info := &out.Latents[i].Info
		if info.GoalRate == nil {
			continue
		}
		info.GoalRate = maps.Clone(info.GoalRate)
		maps.DeleteFunc(info.GoalRate, func(w string, _ float32) bool { return skills.IsAfterSwitch(w) })
	}
	for _, r := range res.Rates {
		if r.Latent >= len(out.Latents) {
			return nil, fmt.Errorf("%w: after switch: latent %d of %d", ErrConfig, r.Latent, len(out.Latents))
		}
		if r.Switches < MinAfterSwitch {
			continue
		}
		info := &out.Latents[r.Latent].Info
		if info.GoalRate == nil {
			info.GoalRate = map[string]float32{}
		}
		info.GoalRate[skills.AfterSwitchWorld(r.World)] = float32(r.Rate())
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("eval: bank with rates after a switch: %w", err)
	}
	return &out, nil
}
