// Package export owns packing trained policies into a skill bank: n slots
// (one policy network each, conditioned on a latent or not) and K latents,
// each naming its slot, under the contract the data were prepared with.
// Every algorithm's bank goes through here.
//
// A bank's policy contract needs a latent of at least one value. An
// unconditioned policy (SMODICE-expert, plain BC) gets a zero weight column
// for a one-value latent and the latent z = [0], so the bank's policy
// computes exactly the trained one.
package export

import (
	"errors"
	"fmt"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/nn"
)

// Latent is one recallable skill: slot Slot's policy with latent Z.
type Latent struct {
	Slot int
	Z    []float32
	Info skills.LatentInfo
}

// ErrExport reports slots and latents that do not make a bank.
var ErrExport = errors.New("export: not a bank")

// Bank packs the slots' policy networks (nn.Conditioned on observations
// and a latent, with a squashed-Gaussian head: a single Gaussian's 2*12
// outputs or a mixture's, the same for every slot) and the latents into a
// bank, and checks it as a whole. The bank's latent width
// is the widest slot's, at least 1; narrower slots get zero columns.
func Bank(c skills.Contract, producer string, slots []*nn.Conditioned[float32], latents []Latent) (*skills.Bank, error) {
	width := 1
	for _, s := range slots {
		width = max(width, s.Latent)
	}
	b := &skills.Bank{Producer: producer, Contract: c, LatentDim: width}
	for i, s := range slots {
		k, err := skills.HeadComponents(s.Net.OutDim(), skills.NumJoints)
		if err != nil {
			return nil, fmt.Errorf("%w: slot %d: %w", ErrExport, i, err)
		}
		if i > 0 && k != max(1, b.Components) {
			return nil, fmt.Errorf("%w: slot %d's policy head has %d components, slot 0's %d", ErrExport, i, k, max(1, b.Components))
		}
		if k > 1 {
			b.Components = k
		}
		net := nn.ToSkills(s.Net)
		first := &net.Layers[0]
		first.W, first.B = s.FirstLayer(width)
		first.In += width
		b.Slots = append(b.Slots, skills.Slot{Policy: net})
	}
	for i, l := range latents {
		if l.Slot < 0 || l.Slot >= len(slots) || len(l.Z) > width {
			return nil, fmt.Errorf("%w: latent %d names slot %d of %d with %d values (width %d)", ErrExport, i, l.Slot, len(slots), len(l.Z), width)
		}
		z := make([]float32, width)
		copy(z, l.Z)
		info := l.Info
		info.Skill = l.Slot
		b.Latents = append(b.Latents, skills.Latent{Info: info, Z: z})
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExport, err)
	}
	return b, nil
}
