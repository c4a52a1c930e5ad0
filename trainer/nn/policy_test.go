package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
)

func TestUnsquashClampsAndAddsJacobian(t *testing.T) {
	acts := []float64{1, -1, 0, 0.5}
	u, logJac := make([]float64, 4), make([]float64, 2)
	Unsquash(acts, 2, u, logJac)
	if want := math.Atanh(ActionClamp); u[0] != want || u[1] != -want {
		t.Fatalf("u of +-1 = %v, %v; want +-%v", u[0], u[1], want)
	}
	if math.IsInf(logJac[0], 0) || math.IsNaN(logJac[0]) {
		t.Fatalf("logJac of a boundary action is %v", logJac[0])
	}
	if want := math.Log(1 - 0.25); math.Abs(logJac[1]-want) > 1e-15 {
		t.Fatalf("logJac = %v, want %v", logJac[1], want)
	}
}

// The density of a = tanh(u) must integrate to one over (-1, 1): this checks
// the tanh correction and the Gaussian normaliser together.
func TestLogProbIsANormalisedDensity(t *testing.T) {
	p, err := NewSquashedGaussian[float64](rand.New(rand.NewPCG(1, 2)), 3, []int{8}, Tanh, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := p.Net.Layers[len(p.Net.Layers)-1]
	clear(out.W)
	tests := []struct{ mean, logStd float64 }{{0, 0}, {0.8, -1}, {-1.5, 0.3}, {3, -2}}
	for _, tc := range tests {
		out.B[0], out.B[1] = tc.mean, tc.logStd
		const n = 200000
		obs := make([]float64, n*3)
		acts, u, logJac, lp := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		da := 2.0 / n
		for i := range acts {
			acts[i] = -1 + (float64(i)+0.5)*da
		}
		Unsquash(acts, 1, u, logJac)
		p.LogProb(&Tape[float64]{}, obs, u, logJac, n, lp)
		mass := 0.0
		for _, l := range lp {
			mass += math.Exp(l) * da
		}
		if math.Abs(mass-1) > 2e-3 {
			t.Errorf("mean %v logStd %v: density integrates to %v", tc.mean, tc.logStd, mass)
		}
	}
}

func TestWeightedNLLGradientCheck(t *testing.T) {
	tests := []struct {
		name       string
		biasMean   float64
		biasLogStd float64
	}{
		{"inside the clips", 0, 0},
		{"mean clipped", 9, 0},
		{"log-std clamped low", 0, -7},
		{"log-std clamped high", 0, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			const obsDim, actDim, rows = 5, 3, 7
			p, err := NewSquashedGaussian[float64](rng, obsDim, []int{9, 8}, ReLU, actDim)
			if err != nil {
				t.Fatal(err)
			}
			last := p.Net.Layers[len(p.Net.Layers)-1]
			for j := range actDim {
				last.B[j] += tc.biasMean
				last.B[actDim+j] += tc.biasLogStd
			}
			obs := randSlice[float64](rng, rows*obsDim, 1)
			acts := make([]float64, rows*actDim)
			for i := range acts {
				acts[i] = 2*rng.Float64() - 1
			}
			acts[0] = 1 // a boundary action
			u, logJac := make([]float64, len(acts)), make([]float64, rows)
			Unsquash(acts, actDim, u, logJac)
			weights := make([]float64, rows)
			for i := range weights {
				weights[i] = rng.Float64()
			}
			tp := &Tape[float64]{}
			lp := make([]float64, rows)
			loss := func() float64 {
				p.LogProb(tp, obs, u, logJac, rows, lp)
				s := 0.0
				for r, l := range lp {
					s -= weights[r] * l
				}
				return s
			}
			p.Net.ZeroGrad()
			got := p.WeightedNLL(tp, obs, u, logJac, weights, rows)
			if want := loss(); math.Abs(got-want) > 1e-9*math.Abs(want) {
				t.Fatalf("WeightedNLL = %v, LogProb gives %v", got, want)
			}
			grads := append([]float64(nil), p.Net.Grads()...)
			// A clamped log-std of -5 makes the loss about 1e5, so rounding
			// alone gives central differences a relative error near 1e-6.
			gradcheck.Check(t, "policy params", p.Net.Params(), grads, loss, 1e-4)
		})
	}
}

func TestModeIsTanhOfClippedMean(t *testing.T) {
	p, _ := NewSquashedGaussian[float64](rand.New(rand.NewPCG(1, 3)), 2, nil, Identity, 2)
	l := p.Net.Layers[0]
	clear(l.W)
	copy(l.B, []float64{0.3, 20, 0, 0})
	out := make([]float64, 2)
	p.Mode(&Tape[float64]{}, []float64{1, 1}, 1, out)
	if out[0] != math.Tanh(0.3) || out[1] != math.Tanh(MeanClip) {
		t.Fatalf("Mode = %v", out)
	}
}

func TestNewSquashedGaussianRejectsBadShape(t *testing.T) {
	if _, err := NewSquashedGaussian[float32](rand.New(rand.NewPCG(1, 1)), 4, []int{8}, ReLU, 0); err == nil {
		t.Fatal("zero action dimension accepted")
	}
}
