package eval

import (
	"fmt"
	"slices"

	"github.com/dualforce/dualforce/skills"
)

// WithOnlineResults returns a copy of b whose latents carry what res measured for them: the
// online return, the online successor features, the measured tags (replacing measured tags of
// an earlier evaluation; other tags are kept) and, if res was filtered, the filter's verdict.
// Latents of b that res did not evaluate keep their metadata; b itself is not changed.
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
