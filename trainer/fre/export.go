package fre

import (
	"strings"

	"github.com/dualforce/dualforce/skills"
)

// Export copies the frozen encoder out of the trainer as a bank carries it
// (skills.FRE): the model's "fre/" arrays (float32, row-major, kernels [in,
// out]) and the reward scale under the naming contract of skills' FRE
// inference, the number of heads, and the anchor states (standardised D_O
// training states) split into subsets of Tokens, on which a new reward is
// evaluated and encoded on the robot. The log-std head and the decoder stay
// in the trainer. Training may continue afterwards.
func (t *Trainer) Export() *skills.FRE {
	net := skills.FRENet{Heads: t.cfg.Arch.Heads, Arrays: map[string]skills.Array{}}
	for _, p := range t.model.Arena.List() {
		if strings.HasPrefix(p.Name, "fre/") {
			net.Arrays[p.Name] = skills.Array{Shape: append([]int(nil), p.Shape...), Data: append([]float32(nil), p.W...)}
		}
	}
	net.Arrays[skills.FRERewardScale] = skills.Array{Shape: []int{1}, Data: []float32{t.prior.Scale}}
	return &skills.FRE{
		Net:     net,
		Anchors: skills.Array{Shape: []int{t.cfg.Anchors, t.cfg.Arch.StateDim}, Data: t.Anchors()},
		Subsets: t.cfg.Anchors / t.cfg.Tokens,
	}
}
