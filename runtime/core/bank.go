package core

import (
	"fmt"
	"path/filepath"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// RewardEncoder encodes a reward that is linear in raw observation elements into a latent of
// the bank: it evaluates the reward on the bank's anchor states and runs the bank's FRE encoder
// on them (skills owns both). Weights has one entry per observation element; z has the bank's
// latent size. It runs when a recall is offered to the core, off the control thread, one call
// at a time.
type RewardEncoder interface {
	EncodeLinearReward(weights, z []float32) error
}

// LoadOptions carry what the core reads of a bank beyond its policies and contract.
type LoadOptions struct {
	// Measured is what evaluation measured per latent; nil reads LatentMeasures of the bank.
	Measured Measured
	// Encoder encodes a reward outside the bank's features; nil takes the bank's own FRE encoder
	// over its anchor states (skills.AnchorEncoder), and without one such a recall is refused.
	Encoder RewardEncoder
}

// Loaded is a bank made ready to run: everything that allocates (policies, observation builder,
// catalogue, recall scratch) is built here, off the control thread, so that swapping banks at a
// policy tick is a pointer swap.
type Loaded struct {
	Bank      *skills.Bank
	Path      string
	policies  []*skills.Policy
	builder   *skills.Builder
	actions   skills.ActionMap
	catalogue *corebus.Catalogue
	obs       []float32
	navigates bool
	measured  Measured
	encoder   RewardEncoder
	features  *skills.Projector
	// Recall scratch: reward weights on the features.
	featureWeights []float32
}

// Load prepares bank (read from path, for the catalogue) to run, with the measurements its
// latents carry and its FRE encoder, if it has one. generation numbers the bank within one
// runtime so that a skill chosen against an older bank is refused.
func Load(bank *skills.Bank, path string, generation uint64) (*Loaded, error) {
	return LoadWith(bank, path, generation, LoadOptions{})
}

// LoadWith is Load with the bank's measurements and FRE encoder given explicitly.
func LoadWith(bank *skills.Bank, path string, generation uint64, opts LoadOptions) (*Loaded, error) {
	if err := bank.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ct := &bank.Contract
	if err := skills.CheckFeedable(ct.Layout, skills.Locomotion48(), skills.Navigation171()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	builder, err := ct.NewBuilder()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	features, err := ct.NewProjector()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	policies, err := bank.NewPolicies()
	if err != nil {
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
	if opts.Measured == nil {
		opts.Measured = LatentMeasures(bank)
	}
	if opts.Encoder == nil && bank.FRE != nil {
		enc, err := bank.NewAnchorEncoder()
		if err != nil {
			return nil, fmt.Errorf("%w: fre: %w", ErrConfig, err)
		}
		opts.Encoder = enc
	}
	_, nav := ct.Layout.Field(skills.FieldHeightMap)
	return &Loaded{
		Bank: bank, Path: path, policies: policies, builder: builder, actions: ct.ActionMap(),
		catalogue: cat, obs: make([]float32, builder.Dim()), navigates: nav,
		measured: opts.Measured, encoder: opts.Encoder, features: features,
		featureWeights: make([]float32, features.Dim()),
	}, nil
}

// Catalogue lists the bank's skills for operators.
func (l *Loaded) Catalogue() *corebus.Catalogue { return l.catalogue }
