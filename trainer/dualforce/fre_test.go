package dualforce

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

// frozenRandomFRE is an FRE encoder with random weights (1 block, 2 heads,
// width 16, latent 8), LayerNorm gains 1 and reward scale 1. Frozen, it is a
// fixed function of the reward: a valid stationary key for V and pi.
func frozenRandomFRE(rng *rand.Rand, state int) *skills.FRENet {
	const embed, bins, ffn, latent = 8, 32, 32, 8
	const w = 2 * embed
	net := &skills.FRENet{Heads: 2, Arrays: map[string]skills.Array{}}
	rand := func(name string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		a := skills.Array{Shape: shape, Data: make([]float32, n)}
		for i := range a.Data {
			a.Data[i] = 0.6*rng.Float32() - 0.3
		}
		net.Arrays[name] = a
	}
	ones := func(name string) {
		net.Arrays[name] = skills.Array{Shape: []int{w}, Data: slices.Repeat([]float32{1}, w)}
	}
	rand(skills.FREStateW, state, embed)
	rand(skills.FREStateB, embed)
	rand(skills.FRERewardEmbed, bins, embed)
	b := func(part string) string { return skills.FREBlockArray(0, part) }
	ones(b("ln1/gamma"))
	ones(b("ln2/gamma"))
	for _, part := range []string{"ln1/beta", "ln2/beta", "attn/bq", "attn/bk", "attn/bv", "attn/bo", "ffn/b2"} {
		rand(b(part), w)
	}
	for _, part := range []string{"attn/wq", "attn/wk", "attn/wv", "attn/wo"} {
		rand(b(part), w, w)
	}
	rand(b("ffn/w1"), w, ffn)
	rand(b("ffn/b1"), ffn)
	rand(b("ffn/w2"), ffn, w)
	ones(skills.FREFinalGamma)
	rand(skills.FREFinalBeta, w)
	rand(skills.FREMeanW, w, latent)
	rand(skills.FREMeanB, latent)
	net.Arrays[skills.FRERewardScale] = skills.Array{Shape: []int{1}, Data: []float32{1}}
	return net
}

func TestFREEncoder(t *testing.T) {
	const n, obsDim = 500, 3
	rng := rand.New(rand.NewPCG(15, 13))
	states, reward := make([]float32, n*obsDim), make([]float32, n)
	for i := range states {
		states[i] = float32(rng.NormFloat64())
	}
	for i := range reward {
		reward[i] = states[i*obsDim]
	}
	net := frozenRandomFRE(rand.New(rand.NewPCG(1, 1)), obsDim)
	enc, err := NewFREEncoder(net, states, obsDim, 32, 64, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	z1, err := enc.Encode(reward)
	if err != nil {
		t.Fatal(err)
	}
	z2, _ := enc.Encode(reward)
	if len(z1) != enc.Latent() || len(z1) != 8 {
		t.Fatalf("latent of %d values, want 8", len(z1))
	}
	if slices.Equal(z1, z2) {
		t.Error("one reward encoded twice gives the same latent: the subsets are not drawn afresh")
	}
	// The same as skills' encoder on subsets drawn with the same generator.
	raw, err := skills.NewEncoder(net, 64)
	if err != nil {
		t.Fatal(err)
	}
	same := rand.New(rand.NewPCG(2, 2))
	want := make([]float32, 8)
	for _, got := range [][]float32{z1, z2} {
		plan, err := skills.RandomPlan(same.IntN, n, 32, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.EncodeReward(states, reward, plan, want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("latent %v, skills' encoder on the same subsets %v", got, want)
		}
	}

	if _, err := NewFREEncoder(net, states, obsDim+1, 8, 64, rng); !errors.Is(err, ErrOtherData) {
		t.Errorf("encoder of 3-wide states on 4-wide data: err %v, want ErrOtherData", err)
	}
	if _, err := NewFREEncoder(net, states[:30*obsDim], obsDim, 8, 64, rng); !errors.Is(err, ErrConfig) {
		t.Errorf("subsets of 64 states out of 30: err %v, want ErrConfig", err)
	}
	bad := slices.Repeat([]float32{float32(math.NaN())}, n)
	if _, err := enc.Encode(bad); !errors.Is(err, skills.ErrNonFiniteReward) {
		t.Errorf("NaN reward: err %v, want ErrNonFiniteReward", err)
	}
}
