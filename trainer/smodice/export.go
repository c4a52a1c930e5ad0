package smodice

import (
	"fmt"
	"math/rand/v2"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/nn"
)

// ExpertLatentName names the SMODICE-expert latent in exported banks.
const ExpertLatentName = "smodice-expert"

// Producer is recorded in banks exported by this package.
const Producer = "dualforce train smodice"

// Policy rebuilds the checkpoint's trained policy.
func (ck *Checkpoint) Policy() (*nn.SquashedGaussian[float32], error) {
	return RebuildPolicy(ck.ObsDim, ck.ActDim, ck.Config.DICE.PolicyHidden, ck.Config.DICE.Activation, ck.DICE.Policy)
}

// RebuildPolicy builds a squashed-Gaussian policy of the given shape and
// loads params into it.
// The sizes are checked against len(params) before anything is allocated,
// so a damaged checkpoint cannot ask for a huge network.
func RebuildPolicy(obsDim, actDim int, hidden []int, act nn.Activation, params []float32) (*nn.SquashedGaussian[float32], error) {
	sizes := append(append([]int{obsDim}, hidden...), 2*actDim)
	want := 0
	for i := 1; i < len(sizes); i++ {
		in, out := sizes[i-1], sizes[i]
		if in <= 0 || out <= 0 || in > len(params) || out > len(params) || want+(in+1)*out > len(params) {
			return nil, fmt.Errorf("%w: a %v policy does not have %d parameters", ErrCheckpoint, sizes, len(params))
		}
		want += (in + 1) * out
	}
	if want != len(params) {
		return nil, fmt.Errorf("%w: %d policy parameters, a %v network has %d", ErrCheckpoint, len(params), sizes, want)
	}
	pi, err := nn.NewSquashedGaussian[float32](rand.New(rand.NewPCG(0, 0)), obsDim, hidden, act, actDim)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	copy(pi.Net.Params(), params)
	return pi, nil
}

// Bank exports the checkpoint's policy as a one-slot, one-latent bank named
// ExpertLatentName.
func (ck *Checkpoint) Bank() (*skills.Bank, error) {
	pi, err := ck.Policy()
	if err != nil {
		return nil, err
	}
	info := skills.LatentInfo{
		Skill: 0, Iteration: ck.DICE.Iteration, Name: ExpertLatentName,
		// R = r_E alone: the imitation weight of Dual-Force's reward is 1.
		SigmoidMu:  1,
		Phi:        ck.Estimate.Constraint,
		OfflinePsi: ck.Estimate.Psi,
		Tags:       []string{"smodice", "expert"},
	}
	return NewBank(ck.Contract, pi, info, Producer)
}

// NewBank packs an unconditioned policy into a bank with LatentDim 1 and
// the single latent z = [0] (see the package doc), after checking the
// bank as a whole.
func NewBank(c skills.Contract, pi *nn.SquashedGaussian[float32], info skills.LatentInfo, producer string) (*skills.Bank, error) {
	net := nn.ToSkills(pi.Net)
	first := &net.Layers[0]
	in := first.In
	w := make([]float32, first.Out*(in+1))
	for r := range first.Out {
		copy(w[r*(in+1):], first.W[r*in:(r+1)*in]) // the latent column stays 0
	}
	first.W, first.In = w, in+1
	b := &skills.Bank{
		Producer:  producer,
		Contract:  c,
		LatentDim: 1,
		Slots:     []skills.Slot{{Policy: net}},
		Latents:   []skills.Latent{{Info: info, Z: []float32{0}}},
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("smodice: exported bank: %w", err)
	}
	return b, nil
}
