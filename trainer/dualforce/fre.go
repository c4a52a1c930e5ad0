package dualforce

import (
	"fmt"
	"math/rand/v2"

	"github.com/dualforce/dualforce/skills"
)

// FREEncoder is the frozen FRE encoder as one skill's Encoder: z_i^k is the
// mean of the encoder's mean latent over m subsets of t offline states drawn
// afresh for every reward (skills.RandomPlan with the skill's generator), as
// in the paper's Algorithm 1. It is not safe for concurrent use: each skill
// has its own.
type FREEncoder struct {
	enc    *skills.Encoder
	states []float32
	rng    *rand.Rand
	m, t   int
}

// NewFREEncoder prepares net to encode rewards on states (the standardised
// offline observations, rows of the encoder's state width) over m subsets
// of t states, drawn with rng. An encoder whose state width is not the
// data's was made for other data.
func NewFREEncoder(net *skills.FRENet, states []float32, obsDim, m, t int, rng *rand.Rand) (*FREEncoder, error) {
	enc, err := skills.NewEncoder(net, t)
	if err != nil {
		return nil, err
	}
	if d := enc.Dims().State; d != obsDim {
		return nil, fmt.Errorf("%w: the FRE encoder reads %d-wide states, the data have %d", ErrOtherData, d, obsDim)
	}
	if m < 1 || t > len(states)/obsDim {
		return nil, fmt.Errorf("%w: %d subsets of %d states out of %d", ErrConfig, m, t, len(states)/obsDim)
	}
	return &FREEncoder{enc: enc, states: states, rng: rng, m: m, t: t}, nil
}

// Latent is the width of the latents the encoder writes.
func (e *FREEncoder) Latent() int { return e.enc.Dims().Latent }

// Encode returns the mean latent of reward (one value per offline state).
func (e *FREEncoder) Encode(reward []float32) ([]float32, error) {
	plan, err := skills.RandomPlan(e.rng.IntN, len(reward), e.m, e.t)
	if err != nil {
		return nil, fmt.Errorf("dualforce: FRE subsets: %w", err)
	}
	z := make([]float32, e.enc.Dims().Latent)
	if err := e.enc.EncodeReward(e.states, reward, plan, z); err != nil {
		return nil, fmt.Errorf("dualforce: FRE: %w", err)
	}
	return z, nil
}
