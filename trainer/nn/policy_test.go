package nn

import (
	"github.com/dualforce/dualforce/skills"
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

// grid is a head's log-density on the midpoints of n equal cells of (-1, 1).
type grid struct {
	acts, u, logJac, lp []float64
	da                  float64 // the cells' width
}

// constantHead is a head of one action on 3 observations with the given
// components whose output is its last bias, which it returns to be set.
func constantHead(t *testing.T, components int) (*SquashedGaussian[float64], []float64) {
	t.Helper()
	p, err := NewSquashedGaussian[float64](rand.New(rand.NewPCG(1, 2)), 3, []int{8}, Tanh, 1, components)
	if err != nil {
		t.Fatal(err)
	}
	out := p.Net.Layers[len(p.Net.Layers)-1]
	clear(out.W)
	return p, out.B
}

// onGrid evaluates the log-density of p, a head of one action on 3
// observations, at the grid's actions (the observations are zero).
func onGrid(p *SquashedGaussian[float64]) grid {
	const n = 200000
	g := grid{acts: make([]float64, n), u: make([]float64, n), logJac: make([]float64, n), lp: make([]float64, n), da: 2.0 / n}
	for i := range g.acts {
		g.acts[i] = -1 + (float64(i)+0.5)*g.da
	}
	Unsquash(g.acts, 1, g.u, g.logJac)
	p.LogProb(&Tape[float64]{}, make([]float64, n*3), g.u, g.logJac, n, g.lp)
	return g
}

// The density of a = tanh(u) must integrate to one over (-1, 1): this checks
// the tanh correction and the Gaussian normaliser together.
func TestLogProbIsANormalisedDensity(t *testing.T) {
	p, bias := constantHead(t, 1)
	tests := []struct{ mean, logStd float64 }{{0, 0}, {0.8, -1}, {-1.5, 0.3}, {3, -2}}
	for _, tc := range tests {
		bias[0], bias[1] = tc.mean, tc.logStd
		g := onGrid(p)
		mass := 0.0
		for _, l := range g.lp {
			mass += math.Exp(l) * g.da
		}
		if math.Abs(mass-1) > 2e-3 {
			t.Errorf("mean %v logStd %v: density integrates to %v", tc.mean, tc.logStd, mass)
		}
	}
}

func TestWeightedNLLGradientCheck(t *testing.T) {
	tests := []struct {
		name       string
		components int
		biasMean   float64
		biasLogStd float64
		// biasLogit is added to component 0's mixture logit.
		biasLogit float64
	}{
		{"inside the clips", 1, 0, 0, 0},
		{"mean clipped", 1, 9, 0, 0},
		{"log-std clamped low", 1, 0, -7, 0},
		{"log-std clamped high", 1, 0, 4, 0},
		{"mixture of 3", 3, 0, 0, 0},
		{"mixture of 3, one component dominant", 3, 0, 0, 6},
		{"mixture of 2, means clipped", 2, 9, 0, 0},
		{"mixture of 4, log-stds clamped low", 4, 0, -7, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			const obsDim, actDim, rows = 5, 3, 7
			p, err := NewSquashedGaussian[float64](rng, obsDim, []int{9, 8}, ReLU, actDim, tc.components)
			if err != nil {
				t.Fatal(err)
			}
			last, k := p.Net.Layers[len(p.Net.Layers)-1], tc.components
			for j := range k * actDim {
				last.B[j] += tc.biasMean
				last.B[k*actDim+j] += tc.biasLogStd
			}
			if k > 1 {
				last.B[2*k*actDim] += tc.biasLogit
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
			// The check must catch a wrong gradient of the head's last bias
			// (a mixture logit, or a log-std).
			last0 := len(grads) - 1
			if r := gradcheck.Compare(p.Net.Params(), gradcheck.Broken(grads, last0, 0.01), loss); r.Worst <= 1e-4 {
				t.Errorf("a gradient off by 1%% of the largest entry passed: worst relative error %.2e", r.Worst)
			}
		})
	}
}

func TestModeIsTanhOfClippedMean(t *testing.T) {
	p, _ := NewSquashedGaussian[float64](rand.New(rand.NewPCG(1, 3)), 2, nil, Identity, 2, 1)
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
	for _, tc := range []struct{ act, components int }{{0, 1}, {2, -1}, {2, skills.MaxComponents + 1}} {
		if _, err := NewSquashedGaussian[float32](rand.New(rand.NewPCG(1, 1)), 4, []int{8}, ReLU, tc.act, tc.components); err == nil {
			t.Errorf("%d actions, %d components accepted", tc.act, tc.components)
		}
	}
}

// A mixture's density of a = tanh(u) must integrate to one too, and equal the
// weighted sum of its components' densities.
func TestMixtureLogProbIsTheWeightedSum(t *testing.T) {
	p, bias := constantHead(t, 2)
	// means, log-stds, logits
	copy(bias, []float64{-1.2, 0.9, -0.5, -1, 0.3, -0.4})
	wts := []float64{math.Exp(0.3), math.Exp(-0.4)}
	wts[0], wts[1] = wts[0]/(wts[0]+wts[1]), wts[1]/(wts[0]+wts[1])
	g := onGrid(p)
	mass := 0.0
	for i, l := range g.lp {
		mass += math.Exp(l) * g.da
		want := 0.0
		for k, m := range []float64{-1.2, 0.9} {
			sd := math.Exp([]float64{-0.5, -1}[k])
			z := (g.u[i] - m) / sd
			want += wts[k] * math.Exp(-0.5*z*z) / (sd * math.Sqrt(2*math.Pi))
		}
		if want = math.Log(want) - g.logJac[i]; math.Abs(l-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("a = %v: log pi = %v, want %v", g.acts[i], l, want)
		}
	}
	if math.Abs(mass-1) > 2e-3 {
		t.Errorf("mixture density integrates to %v", mass)
	}
}

func TestMixtureModeIsTheMostProbableComponentsMean(t *testing.T) {
	p, _ := NewSquashedGaussian[float64](rand.New(rand.NewPCG(1, 3)), 1, nil, Identity, 2, 3)
	l := p.Net.Layers[0]
	clear(l.W)
	// means (3 x 2), log-stds (3 x 2), logits: the logit of component 1
	// grows with the input, the others are constant.
	copy(l.B, []float64{0.1, 0.2, 0.3, 20, -0.5, -0.6, 0, 0, 0, 0, 0, 0, 1, 0, 1})
	l.W[13] = 1
	tests := []struct {
		in   float64
		want []float64
	}{
		{0, []float64{math.Tanh(0.1), math.Tanh(0.2)}}, // components 0 and 2 tie: the lower index
		{2, []float64{math.Tanh(0.3), math.Tanh(MeanClip)}},
		{-5, []float64{math.Tanh(0.1), math.Tanh(0.2)}},
	}
	for _, tc := range tests {
		out := make([]float64, 2)
		p.Mode(&Tape[float64]{}, []float64{tc.in}, 1, out)
		if out[0] != tc.want[0] || out[1] != tc.want[1] {
			t.Errorf("input %v: Mode = %v, want %v", tc.in, out, tc.want)
		}
	}
}
