// Package skillstest owns tiny hand-built skill banks for tests of the code that runs banks
// (the runtime core and its drivers, evaluation): a policy that outputs one constant action
// whatever it sees, one whose action overflows to NaN, and a seeded random network of a real
// policy's size, each wrapped in a one-latent bank that validates; and banks of several
// constant skills (one slot and latent each) to switch between, with single-Gaussian or
// mixture policy heads.
package skillstest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

// LatentDim is the latent size of the banks built here.
const LatentDim = 2

// Contract is skills.NewContract of layout l, failing t on error.
func Contract(t testing.TB, l skills.Layout) skills.Contract {
	t.Helper()
	c, err := skills.NewContract(l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Locomotion is the default locomotion contract.
func Locomotion(t testing.TB) skills.Contract { return Contract(t, skills.Locomotion48()) }

// Constant is a bank under contract c whose single policy outputs action a whatever it sees: a
// one-layer network with zero weights and the mean rows' bias set to atanh(a).
func Constant(t testing.TB, c skills.Contract, a [skills.NumJoints]float32) *skills.Bank {
	t.Helper()
	in := c.Layout.Dim() + LatentDim
	layer := skills.Dense{In: in, Out: 2 * skills.NumJoints, W: make([]float32, in*2*skills.NumJoints), B: make([]float32, 2*skills.NumJoints)}
	for j := range a {
		layer.B[j] = float32(math.Atanh(float64(a[j])))
	}
	return Bank(t, c, skills.MLP{Layers: []skills.Dense{layer}})
}

// NaNAction is a bank under contract c whose policy's action is NaN although every weight is
// finite: two hidden units at 1e38 each, and every mean row adds one and subtracts the other at
// 1e38 each, which overflows to +Inf - Inf.
func NaNAction(t testing.TB, c skills.Contract) *skills.Bank {
	t.Helper()
	in := c.Layout.Dim() + LatentDim
	hidden := skills.Dense{In: in, Out: 2, W: make([]float32, 2*in), B: []float32{1e38, 1e38}, Act: skills.ActReLU}
	out := skills.Dense{In: 2, Out: 2 * skills.NumJoints, W: make([]float32, 4*skills.NumJoints), B: make([]float32, 2*skills.NumJoints)}
	for row := range 2 * skills.NumJoints {
		out.W[2*row], out.W[2*row+1] = 1e38, -1e38
	}
	return Bank(t, c, skills.MLP{Layers: []skills.Dense{hidden, out}})
}

// Random is a bank under contract c whose policy is a network with the given hidden layer sizes
// (tanh) and seeded uniform weights: every output depends on every input through long float32
// sums, as a trained policy's does, while the mean rows' small weights keep the action within
// about +-0.2 of the default pose. For tests of what float rounding does (replay across CPUs).
func Random(t testing.TB, c skills.Contract, seed uint64, hidden ...int) *skills.Bank {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	sizes := append(append([]int{c.Layout.Dim() + LatentDim}, hidden...), 2*skills.NumJoints)
	var net skills.MLP
	for i := 1; i < len(sizes); i++ {
		in, out := sizes[i-1], sizes[i]
		scale := float32(math.Sqrt(3 / float64(in))) // unit variance through each layer
		act := skills.ActTanh
		if i == len(sizes)-1 {
			scale, act = 0.1*scale, skills.ActNone
		}
		l := skills.Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out), Act: act}
		for k := range l.W {
			l.W[k] = scale * (2*rng.Float32() - 1)
		}
		net.Layers = append(net.Layers, l)
	}
	return Bank(t, c, net)
}

// Bank wraps policy net in a one-slot, one-latent bank under contract c and validates it.
func Bank(t testing.TB, c skills.Contract, net skills.MLP) *skills.Bank {
	t.Helper()
	b := &skills.Bank{Producer: "skillstest", Contract: c, LatentDim: LatentDim,
		Slots: []skills.Slot{{Policy: net}},
		Latents: []skills.Latent{{Info: skills.LatentInfo{Skill: 0, Name: "constant", OfflinePsi: make([]float32, c.Features.Dim(c.Layout))},
			Z: make([]float32, LatentDim)}}}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// Navigation is the default navigation contract with a 20 s episode.
func Navigation(t testing.TB) skills.Contract {
	c := Contract(t, skills.Navigation171())
	c.EpisodeSeconds = 20
	return c
}

// ConstantSlots is a bank under contract c with one slot and one latent per action: latent i,
// named "constant<i>", runs a policy that outputs actions[i] whatever it sees.
func ConstantSlots(t testing.TB, c skills.Contract, actions ...[skills.NumJoints]float32) *skills.Bank {
	t.Helper()
	b := &skills.Bank{Producer: "skillstest", Contract: c, LatentDim: LatentDim}
	for i, a := range actions {
		net := Constant(t, c, a).Slots[0].Policy
		b.Slots = append(b.Slots, skills.Slot{Policy: net})
		b.Latents = append(b.Latents, skills.Latent{
			Info: skills.LatentInfo{Skill: i, Name: fmt.Sprintf("constant%d", i), OfflinePsi: make([]float32, c.Features.Dim(c.Layout))},
			Z:    []float32{float32(i), 0},
		})
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// MixtureSlots is ConstantSlots with every slot's policy head a mixture of the given number of
// components (2..skills.MaxComponents): in slot i the component with the largest logit, the
// last, outputs actions[i], and every other component an action at least 0.5 away from it in
// every joint, so that a policy that acted on another component than the most likely one would
// be seen to.
func MixtureSlots(t testing.TB, c skills.Contract, components int, actions ...[skills.NumJoints]float32) *skills.Bank {
	t.Helper()
	b := ConstantSlots(t, c, actions...)
	b.Components = components
	in, out := c.Layout.Dim()+LatentDim, skills.HeadOutputs(skills.NumJoints, components)
	for i, a := range actions {
		head := skills.Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		for k := range components {
			for j, v := range a {
				if k != components-1 {
					v = float32(math.Copysign(0.5, float64(-v)))
				}
				head.B[k*skills.NumJoints+j] = float32(math.Atanh(float64(v)))
			}
			head.B[2*components*skills.NumJoints+k] = float32(k)
		}
		b.Slots[i].Policy = skills.MLP{Layers: []skills.Dense{head}}
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// ConstantFRE is an FRE encoder for contract c that encodes every reward to latent z: every
// weight is zero, so the final layer's bias is all that reaches the output. Its 8 anchors (2
// subsets) are zero states. It exercises the runtime's recall through a real encoder where what
// is tested is the choice among stored latents, not the encoding.
func ConstantFRE(t testing.TB, c skills.Contract, z []float32) *skills.FRE {
	t.Helper()
	const width, ffn, bins, anchors = 4, 4, 2, 8
	net := skills.FRENet{Heads: 1, Arrays: map[string]skills.Array{}}
	zeros := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		net.Arrays[name] = skills.Array{Shape: shape, Data: make([]float32, n)}
	}
	zeros(skills.FREStateW, c.Layout.Dim(), width/2)
	zeros(skills.FREStateB, width/2)
	zeros(skills.FRERewardEmbed, bins, width/2)
	for _, name := range []string{"ln1/gamma", "ln1/beta", "attn/bq", "attn/bk", "attn/bv", "attn/bo", "ln2/gamma", "ln2/beta", "ffn/b2"} {
		zeros(skills.FREBlockArray(0, name), width)
	}
	for _, name := range []string{"attn/wq", "attn/wk", "attn/wv", "attn/wo"} {
		zeros(skills.FREBlockArray(0, name), width, width)
	}
	zeros(skills.FREBlockArray(0, "ffn/w1"), width, ffn)
	zeros(skills.FREBlockArray(0, "ffn/b1"), ffn)
	zeros(skills.FREBlockArray(0, "ffn/w2"), ffn, width)
	zeros(skills.FREFinalGamma, width)
	zeros(skills.FREFinalBeta, width)
	zeros(skills.FREMeanW, width, len(z))
	net.Arrays[skills.FREMeanB] = skills.Array{Shape: []int{len(z)}, Data: append([]float32(nil), z...)}
	net.Arrays[skills.FRERewardScale] = skills.Array{Shape: []int{1}, Data: []float32{1}}
	return &skills.FRE{Net: net, Subsets: 2,
		Anchors: skills.Array{Shape: []int{anchors, c.Layout.Dim()}, Data: make([]float32, anchors*c.Layout.Dim())}}
}
