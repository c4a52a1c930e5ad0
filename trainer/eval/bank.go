package eval

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
)

// WithOnlineResults returns a copy of b whose latents carry what res measured for them: the
// online return, the online successor features, the measured tags (replacing measured tags of
// an earlier evaluation; other tags are kept), if res was filtered, the filter's verdict, and
// for navigation the goal rate in res's world and in every world of the robustness experiment
// (replacing rates of an earlier evaluation in those worlds; rates in others are kept). Latents
// of b that res did not evaluate keep their metadata; b itself is not changed. A world whose
// name a bank cannot hold (skills.CheckWorldName) is an error wrapping skills.ErrWorldName.
func WithOnlineResults(b *skills.Bank, subjects []Subject, res *Result) (*skills.Bank, error) {
	if len(subjects) != len(res.Subjects) {
		return nil, fmt.Errorf("%w: %d subjects for %d results", ErrConfig, len(subjects), len(res.Subjects))
	}
	out := *b
	out.Latents = slices.Clone(b.Latents)
	for i, s := range subjects {
		if s.Bank != b {
			continue
		}
		sum := &res.Subjects[i]
		info := &out.Latents[s.Latent].Info
		ret := sum.MeanReturn
		info.OnlineReturn = &ret
		info.OnlinePsi = make([]float32, len(sum.Psi))
		for k, v := range sum.Psi {
			info.OnlinePsi[k] = float32(v)
		}
		tags := slices.DeleteFunc(slices.Clone(info.Tags), measuredTag)
		for _, t := range sum.Measured {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		info.Tags = tags
		if res.Task == collect.TaskNavigation {
			info.GoalRate = maps.Clone(info.GoalRate)
			if info.GoalRate == nil {
				info.GoalRate = map[string]float32{}
			}
			info.GoalRate[res.World] = float32(sum.GoalRate)
			for w, r := range sum.WorldGoalRate {
				info.GoalRate[w] = float32(r)
			}
		}
		if sum.Passed != nil {
			passed := *sum.Passed
			info.PassedFilter = &passed
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("eval: bank with online results: %w", err)
	}
	return &out, nil
}
