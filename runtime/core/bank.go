package core

import (
	"fmt"
	"path/filepath"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// Loaded is a bank made ready to run: everything that allocates (policies, observation builder,
// catalogue) is built here, off the control thread, so that swapping banks at a policy tick is a
// pointer swap.
type Loaded struct {
	Bank      *skills.Bank
	Path      string
	policies  []*skills.Policy
	builder   *skills.Builder
	actions   skills.ActionMap
	catalogue *corebus.Catalogue
	obs       []float32
	navigates bool
}

// Load prepares bank (read from path, for the catalogue) to run. generation numbers the bank
// within one runtime so that a skill chosen against an older bank is refused.
func Load(bank *skills.Bank, path string, generation uint64) (*Loaded, error) {
	if err := bank.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ct := &bank.Contract
	if err := skills.CheckFeedable(ct.Layout, skills.Locomotion48(), skills.Navigation171()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	norm, err := skills.NewNormaliser(ct.Normaliser)
	if err != nil {
		return nil, fmt.Errorf("%w: normaliser: %w", ErrConfig, err)
	}
	builder, err := skills.NewBuilder(ct.Layout, ct.DefaultPose, ct.EpisodeSeconds, norm)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	policies, err := bank.NewPolicies()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	actions := skills.ActionMap{DefaultPose: ct.DefaultPose, Scale: ct.ActionScale, Lower: ct.JointLower, Upper: ct.JointUpper}
	if err := actions.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cat := &corebus.Catalogue{Generation: generation, Path: filepath.Clean(path), LatentDim: bank.LatentDim}
	for i, l := range bank.Latents {
		name := l.Info.Name
		if name == "" {
			name = fmt.Sprintf("skill%d-iter%d", l.Info.Skill, l.Info.Iteration)
		}
		cat.Skills = append(cat.Skills, corebus.Skill{Index: i, Name: name, Tags: l.Info.Tags})
	}
	_, nav := ct.Layout.Field(skills.FieldHeightMap)
	return &Loaded{
		Bank: bank, Path: path, policies: policies, builder: builder, actions: actions,
		catalogue: cat, obs: make([]float32, builder.Dim()), navigates: nav,
	}, nil
}

// Catalogue lists the bank's skills for operators.
func (l *Loaded) Catalogue() *corebus.Catalogue { return l.catalogue }
