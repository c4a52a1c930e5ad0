package eval

import (
	"context"
	"fmt"
	"slices"

	"github.com/dualforce/dualforce/sim/worlds"
)

// FenceWorlds are the worlds of the robustness experiment (navigation): the box with a fence
// blocking the way round it on the left, on the right, and on both sides.
var FenceWorlds = []string{"obstacle_fence_left", "obstacle_fence_right", "obstacle_fenced"}

// WorldRun is the cost of one world's evaluation in a robustness experiment.
type WorldRun struct {
	World       string
	PolicySteps int
	Ticks       int
	Seconds     float64
	// Switches sums up, per subject, the skill switches the core made there (Config.Switching).
	Switches []SwitchSummary
}

// FencedVariant returns world with the fences and the jitter of the built-in fenced world name,
// under that name: the robustness experiment's world for a task world of its own (a higher box,
// say), recorded under the name the runtime ranks its switch candidates by. Of the built-in
// obstacle world it is the built-in fenced world itself.
func FencedVariant(world *worlds.Scenario, name string) (*worlds.Scenario, error) {
	fenced, err := worlds.Builtin(name)
	if err != nil {
		return nil, err
	}
	v := *world
	v.Name, v.Fences, v.Jitter = fenced.Name, fenced.Fences, fenced.Jitter
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("eval: %s with the fences of %s: %w", world.Name, name, err)
	}
	return &v, nil
}

// Robustness evaluates the subjects of res (the same subjects, in the same order) in the
// fenced variants (FencedVariant) of cfg's world named worldNames with cfg's settings, and
// records every subject's goal rate and rollouts there in res.Subjects[i].WorldGoalRate and
// WorldRollouts. Rollout k draws the same seed in every world as in res.
func Robustness(ctx context.Context, cfg Config, subjects []Subject, res *Result, worldNames []string) ([]WorldRun, error) {
	if len(subjects) != len(res.Subjects) {
		return nil, fmt.Errorf("%w: %d subjects for %d results", ErrConfig, len(subjects), len(res.Subjects))
	}
	world, err := cfg.scenario()
	if err != nil {
		return nil, err
	}
	var runs []WorldRun
	for _, name := range worldNames {
		sc, err := FencedVariant(world, name)
		if err != nil {
			return runs, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		c := cfg
		c.Scenario, c.Paths, c.Traces = sc, 0, false
		r, err := Evaluate(ctx, c, subjects)
		if err != nil {
			return runs, fmt.Errorf("eval: world %s: %w", name, err)
		}
		for i := range res.Subjects {
			s := &res.Subjects[i]
			if s.WorldGoalRate == nil {
				s.WorldGoalRate = map[string]float64{}
			}
			if s.WorldRollouts == nil { // a result read back from before world_rollouts existed
				s.WorldRollouts = map[string][]Rollout{}
			}
			s.WorldGoalRate[name], s.WorldRollouts[name] = r.Subjects[i].GoalRate, r.Subjects[i].Rollouts
		}
		run := WorldRun{World: name, PolicySteps: r.PolicySteps, Ticks: r.Ticks, Seconds: r.Seconds}
		for i := range r.Subjects {
			run.Switches = append(run.Switches, SummariseSwitches(r.Subjects[i].Rollouts))
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// Subsample picks at most n of the subjects, spread evenly over skills and, within a skill,
// over iterations (first and last included): each skill gets an equal share (the first skills
// one more when n does not divide), and a skill with fewer latents than its share gives the
// rest to the others. The picks keep the subjects' order. n <= 0 or n >= len(subjects) keeps
// them all.
func Subsample(subjects []Subject, n int) []Subject {
	if n <= 0 || n >= len(subjects) {
		return subjects
	}
	bySkill := map[int][]int{}
	for i, s := range subjects {
		skill := s.Bank.Latents[s.Latent].Info.Skill
		bySkill[skill] = append(bySkill[skill], i)
	}
	skills := make([]int, 0, len(bySkill))
	for k := range bySkill {
		skills = append(skills, k)
	}
	slices.Sort(skills)
	for _, k := range skills {
		slices.SortStableFunc(bySkill[k], func(a, b int) int {
			return subjects[a].Bank.Latents[subjects[a].Latent].Info.Iteration - subjects[b].Bank.Latents[subjects[b].Latent].Info.Iteration
		})
	}
	// Shares: equal, then what small skills cannot use goes round to the others.
	share := map[int]int{}
	left := n
	for left > 0 {
		open := 0
		for _, k := range skills {
			if share[k] < len(bySkill[k]) {
				open++
			}
		}
		if open == 0 {
			break
		}
		each, extra := left/open, left%open
		for _, k := range skills {
			if share[k] >= len(bySkill[k]) {
				continue
			}
			give := each
			if extra > 0 {
				give++
				extra--
			}
			give = min(give, len(bySkill[k])-share[k])
			share[k] += give
			left -= give
		}
	}
	var picked []int
	for _, k := range skills {
		idx, m := bySkill[k], share[k]
		for j := range m {
			// Evenly spaced over the skill's iterations, first and last included.
			pos := 0
			if m > 1 {
				pos = j * (len(idx) - 1) / (m - 1)
			}
			picked = append(picked, idx[pos])
		}
	}
	slices.Sort(picked)
	out := make([]Subject, len(picked))
	for i, p := range picked {
		out[i] = subjects[p]
	}
	return out
}
