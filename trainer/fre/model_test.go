package fre

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
	"github.com/dualforce/dualforce/trainer/nn"
)

func tinyArch() Arch {
	return Arch{StateDim: 5, StateWidth: 4, RewardWidth: 4, Bins: 6, Blocks: 2, Heads: 2, FFN: 6, Latent: 3, DecoderHidden: []int{7, 5}}
}

func randBatch[T nn.Float](rng *rand.Rand, a Arch, sets, tokens, decode int, noise bool) *Batch[T] {
	b := &Batch[T]{Sets: sets, Tokens: tokens, Decode: decode,
		EncStates: make([]T, sets*tokens*a.StateDim), EncBins: make([]int32, sets*tokens),
		DecStates: make([]T, sets*decode*a.StateDim), DecRewards: make([]T, sets*decode)}
	for i := range b.EncStates {
		b.EncStates[i] = T(rng.NormFloat64())
	}
	for i := range b.EncBins {
		b.EncBins[i] = int32(rng.IntN(a.Bins))
	}
	for i := range b.DecStates {
		b.DecStates[i] = T(rng.NormFloat64())
	}
	for i := range b.DecRewards {
		b.DecRewards[i] = T(2*rng.Float64() - 1)
	}
	if noise {
		b.Noise = make([]T, sets*a.Latent)
		for i := range b.Noise {
			b.Noise[i] = T(rng.NormFloat64())
		}
	}
	return b
}

// TestModelGradient checks the whole loss (encoder, reparameterisation, KL,
// decoder, MSE) against float64 central differences over every parameter.
func TestModelGradient(t *testing.T) {
	for _, noise := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(21, 22))
		m, err := NewModel[float64](tinyArch(), 3)
		if err != nil {
			t.Fatal(err)
		}
		// Non-trivial LayerNorm gains and biases, a log-std away from 0.
		for i := range m.Arena.Params() {
			m.Arena.Params()[i] += 0.3 * rng.NormFloat64()
		}
		b := randBatch[float64](rng, m.Arch, 3, 5, 4, noise)
		loss := func() float64 {
			scratch, _ := NewModel[float64](tinyArch(), 3)
			copy(scratch.Arena.Params(), m.Arena.Params())
			return scratch.Step(b, 0.5).Total
		}
		m.Arena.ZeroGrad()
		m.Step(b, 0.5)
		grad := append([]float64(nil), m.Arena.Grads()...)
		r := gradcheck.Check(t, "model", m.Arena.Params(), grad, loss, 1e-5)
		broken := gradcheck.Compare(m.Arena.Params(), gradcheck.Broken(grad, len(grad)/3, 0.01), loss)
		if broken.Worst <= 1e-5 {
			t.Errorf("a gradient off by 1%% of the largest passed the check (%.2e)", broken.Worst)
		}
		t.Logf("noise %v: %d parameters, max relative error %.2e; broken gradient flagged at %.2e", noise, len(grad), r.Worst, broken.Worst)
	}
}

// The encoder reads a set: permuting the pairs of one reward must leave its
// latent unchanged (float32, the training type).
func TestEncoderIsPermutationInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	a := DefaultArch(12)
	m, err := NewModel[float32](a, 1)
	if err != nil {
		t.Fatal(err)
	}
	const sets, tokens = 3, 32
	b := randBatch[float32](rng, a, sets, tokens, 1, false)
	mean, logStd := m.Encode(b.EncStates, b.EncBins, sets, tokens)
	mean, logStd = append([]float32(nil), mean...), append([]float32(nil), logStd...)
	states, bins := make([]float32, len(b.EncStates)), make([]int32, len(b.EncBins))
	for s := range sets {
		for k, from := range rng.Perm(tokens) {
			i, j := s*tokens+k, s*tokens+from
			copy(states[i*a.StateDim:(i+1)*a.StateDim], b.EncStates[j*a.StateDim:(j+1)*a.StateDim])
			bins[i] = b.EncBins[j]
		}
	}
	pm, pl := m.Encode(states, bins, sets, tokens)
	worst := 0.0
	for i := range mean {
		worst = max(worst, math.Abs(float64(pm[i]-mean[i])), math.Abs(float64(pl[i]-logStd[i])))
	}
	t.Logf("largest change of a latent under permutation: %.2e", worst)
	if worst > 1e-5 {
		t.Fatalf("permuting the pairs moved the latent by %g", worst)
	}
	// And the latent does depend on the rewards.
	bins[0] = (bins[0] + int32(a.Bins/2)) % int32(a.Bins)
	pm, _ = m.Encode(states, bins, sets, tokens)
	if pm[0] == mean[0] && pm[1] == mean[1] {
		t.Fatal("changing one reward did not move the latent")
	}
}

func TestArchValidate(t *testing.T) {
	bad := []func(*Arch){
		func(a *Arch) { a.Heads = 3 },
		func(a *Arch) { a.Latent = 0 },
		func(a *Arch) { a.DecoderHidden = nil },
		func(a *Arch) { a.DecoderHidden = []int{4, -1} },
		func(a *Arch) { a.StateDim = -2 },
	}
	for i, f := range bad {
		a := DefaultArch(48)
		f(&a)
		if _, err := NewModel[float32](a, 1); err == nil {
			t.Errorf("case %d: %+v accepted", i, a)
		}
	}
}

// A training step allocates nothing once its buffers have grown.
func TestStepDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	a := tinyArch()
	m, _ := NewModel[float32](a, 1)
	b := randBatch[float32](rng, a, 8, 6, 3, true)
	opt := nn.NewAdam[float32](len(m.Arena.Params()), 1e-3)
	step := func() {
		m.Arena.ZeroGrad()
		m.Step(b, 0.01)
		opt.Step(m.Arena.Params(), m.Arena.Grads())
	}
	step()
	if n := testing.AllocsPerRun(10, step); n != 0 {
		t.Fatalf("a step allocates %v times", n)
	}
}

// The float32 model (training) computes what the float64 model (gradient
// checks) does, to float32 rounding.
func TestFloat32MatchesFloat64(t *testing.T) {
	a := DefaultArch(12)
	m32, _ := NewModel[float32](a, 5)
	m64, _ := NewModel[float64](a, 5)
	rng := rand.New(rand.NewPCG(6, 6))
	b64 := randBatch[float64](rng, a, 4, 32, 8, true)
	b32 := &Batch[float32]{Sets: 4, Tokens: 32, Decode: 8, EncBins: b64.EncBins,
		EncStates: to32(b64.EncStates), DecStates: to32(b64.DecStates), DecRewards: to32(b64.DecRewards), Noise: to32(b64.Noise)}
	l32, l64 := m32.Step(b32, 0.01), m64.Step(b64, 0.01)
	mean32, _ := m32.Encode(b32.EncStates, b32.EncBins, 4, 32)
	mean64, _ := m64.Encode(b64.EncStates, b64.EncBins, 4, 32)
	worst := 0.0
	for i := range mean64 {
		worst = max(worst, math.Abs(float64(mean32[i])-mean64[i]))
	}
	t.Logf("latent: largest float32 error %.2e; loss %.6f (float32) vs %.6f", worst, l32.Total, l64.Total)
	if worst > 1e-5 || math.Abs(l32.Total-l64.Total) > 1e-5*max(1, l64.Total) {
		t.Fatalf("float32 and float64 models disagree: latent by %g, loss %v vs %v", worst, l32.Total, l64.Total)
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
