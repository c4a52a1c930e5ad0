package fre

import (
	"strings"

	"github.com/dualforce/dualforce/skills"
)

// RewardScaleArray names the one-value array holding the reward scale: the
// encoder normalises every reward as clip(r / scale, -1, 1).
const RewardScaleArray = "fre/reward_scale"

// Encoder is the frozen encoder as the bank carries it: the "fre/" arrays
// of the model (float32, row-major, kernels [in, out]) and the reward
// scale under the naming contract of skills' FRE inference, the number of
// heads (which shapes cannot tell), and the anchor states (standardised
// D_O states) on which a new reward is evaluated to be encoded on the
// robot. The log-std head and the decoder stay in the trainer.
type Encoder struct {
	Heads    int
	Arrays   map[string]skills.Array
	Anchors  []float32
	StateDim int
}

// Export copies the encoder out of the trainer; training may continue.
func (t *Trainer) Export() Encoder {
	e := Encoder{Heads: t.cfg.Arch.Heads, Arrays: map[string]skills.Array{}, Anchors: t.Anchors(), StateDim: t.cfg.Arch.StateDim}
	for _, p := range t.model.Arena.List() {
		if strings.HasPrefix(p.Name, "fre/") {
			e.Arrays[p.Name] = skills.Array{Shape: append([]int(nil), p.Shape...), Data: append([]float32(nil), p.W...)}
		}
	}
	e.Arrays[RewardScaleArray] = skills.Array{Shape: []int{1}, Data: []float32{t.prior.Scale}}
	return e
}
