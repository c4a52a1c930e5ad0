package disc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
	"github.com/dualforce/dualforce/trainer/nn"
)

func TestPenaltyGradientCheck(t *testing.T) {
	tests := []struct {
		name   string
		sizes  []int
		weight float64
	}{
		{"one hidden layer", []int{4, 6, 1}, 10},
		{"two hidden layers (the discriminator)", []int{5, 7, 6, 1}, 10},
		{"three hidden layers", []int{3, 5, 6, 4, 1}, 2.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 32))
			net, err := nn.NewMLP[float64](rng, tc.sizes, nn.Tanh, nn.Identity)
			if err != nil {
				t.Fatal(err)
			}
			// Larger weights than the default init so the norms sit away
			// from 1 and the tanh units away from their linear range.
			for i := range net.Params() {
				net.Params()[i] *= 2.5
			}
			const rows = 5
			d := net.InDim()
			x := make([]float64, rows*d)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			var p penalty[float64]
			net.ZeroGrad()
			value, _ := p.run(net, x, rows, tc.weight)
			paramGrad := append([]float64(nil), net.Grads()...)
			inputGrad := append([]float64(nil), p.g...)

			// The input gradient the penalty is built on.
			var tape nn.Tape[float64]
			sumF := func() float64 {
				s := 0.0
				for _, f := range net.Forward(&tape, x, rows) {
					s += f
				}
				return s
			}
			gradcheck.Check(t, "grad_x f", x, inputGrad, sumF, 1e-6)

			// The penalty's gradient with respect to every parameter.
			var scratch penalty[float64]
			penaltyValue := func() float64 {
				v, _ := scratch.run(net, x, rows, tc.weight)
				return v
			}
			if v := penaltyValue(); math.Abs(v-value) > 1e-12 {
				t.Fatalf("penalty not reproducible: %v vs %v", v, value)
			}
			t.Logf("penalty value %.4f", value)
			gradcheck.Check(t, "penalty", net.Params(), paramGrad, penaltyValue, 1e-5)
			if out := paramGrad[len(paramGrad)-1]; out != 0 {
				t.Errorf("output bias gradient %v, want 0", out)
			}
		})
	}
}

func TestBCEGradientCheck(t *testing.T) {
	logits := []float64{-3, -0.2, 0.1, 2, 40, -40}
	for _, label := range []float64{0, 1} {
		grad := make([]float64, len(logits))
		loss, acc := bce(logits, label, 0.5, grad)
		scratch := make([]float64, len(logits))
		t.Logf("label %v: loss %.4f, accuracy %.2f", label, loss, acc)
		gradcheck.Check(t, fmt.Sprintf("BCE label %v", label), logits, grad, func() float64 {
			l, _ := bce(logits, label, 0.5, scratch)
			return l
		}, 1e-6)
		if math.IsInf(loss, 0) || math.IsNaN(loss) {
			t.Errorf("loss %v for logits of +-40", loss)
		}
	}
}

func TestCheckPenaltyNetRejectsOtherShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		sizes          []int
		hidden, output nn.Activation
	}{
		{[]int{3, 4, 1}, nn.ReLU, nn.Identity},
		{[]int{3, 4, 2}, nn.Tanh, nn.Identity},
		{[]int{3, 4, 1}, nn.Tanh, nn.Tanh},
		{[]int{3, 1}, nn.Tanh, nn.Identity},
	} {
		net, err := nn.NewMLP[float32](rng, c.sizes, c.hidden, c.output)
		if err != nil {
			t.Fatal(err)
		}
		if checkPenaltyNet(net) == nil {
			t.Errorf("%v %v/%v accepted", c.sizes, c.hidden, c.output)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, edit := range []func(*Config){
		func(c *Config) { c.Batch = 0 },
		func(c *Config) { c.LR = 0 },
		func(c *Config) { c.Hidden = nil },
		func(c *Config) { c.Hidden = []int{0} },
		func(c *Config) { c.RewardClip = 0 },
		func(c *Config) { c.PenaltyWeight = -1 },
	} {
		cfg := DefaultConfig()
		edit(&cfg)
		if _, err := New(4, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// gaussians draws n points of N(mean, I).
func gaussians(rng *rand.Rand, n int, mean []float64) []float32 {
	x := make([]float32, n*len(mean))
	for i := range x {
		x[i] = float32(mean[i%len(mean)] + rng.NormFloat64())
	}
	return x
}

// TestTwoGaussians trains the default discriminator to tell N(mu_E, I) from
// N(mu_O, I) in 16 dimensions with |mu_E - mu_O| = 3 (Bayes accuracy
// Phi(1.5) = 0.933) and measures it on held-out points.
func TestTwoGaussians(t *testing.T) {
	const dim, sep = 16, 3.0
	rng := rand.New(rand.NewPCG(41, 42))
	dir := make([]float64, dim)
	norm := 0.0
	for i := range dir {
		dir[i] = rng.NormFloat64()
		norm += dir[i] * dir[i]
	}
	muE, muO := make([]float64, dim), make([]float64, dim)
	for i := range dir {
		muE[i] = 0.5 * sep * dir[i] / math.Sqrt(norm)
		muO[i] = -muE[i]
	}
	expert, offline := gaussians(rng, 4096, muE), gaussians(rng, 4096, muO)
	testE, testO := gaussians(rng, 4096, muE), gaussians(rng, 4096, muO)

	d, err := New(dim, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var st StepStats
	for range 400 {
		st = d.Step(expert, offline)
	}
	t.Logf("last step: BCE %.3f, penalty %.4f, mean |grad_x f| %.3f", st.BCE, st.Penalty, st.GradNorm)

	fE, fO := make([]float32, 4096), make([]float32, 4096)
	d.Logits(testE, fE)
	d.Logits(testO, fO)
	right, lo, hi := 0, math.Inf(1), math.Inf(-1)
	for i := range fE {
		if fE[i] > 0 {
			right++
		}
		if fO[i] < 0 {
			right++
		}
		lo = min(lo, float64(fE[i]), float64(fO[i]))
		hi = max(hi, float64(fE[i]), float64(fO[i]))
	}
	acc := float64(right) / 8192
	bayes := 0.5 * math.Erfc(-sep/2/math.Sqrt2)
	t.Logf("held-out accuracy %.4f (Bayes %.4f), logit range [%.2f, %.2f]", acc, bayes, lo, hi)
	if acc < bayes-0.02 {
		t.Errorf("held-out accuracy %.4f, want within 0.02 of Bayes %.4f", acc, bayes)
	}
	if st.GradNorm > 1.5 {
		t.Errorf("mean input-gradient norm %.2f: the penalty is not holding f near 1-Lipschitz", st.GradNorm)
	}

	far := make([]float32, dim)
	for i := range far {
		far[i] = float32(40 * muE[i])
	}
	r := make([]float32, 1)
	d.Reward(far, r)
	f := make([]float32, 1)
	d.Logits(far, f)
	t.Logf("far expert-side point: f = %.2f, r_E = %.2f", f[0], r[0])
	if r[0] > 6.9 || r[0] <= 0 || (f[0] > 6.9 && r[0] != 6.9) {
		t.Errorf("reward %v for logit %v, want clipped to 6.9", r[0], f[0])
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	if nn.CurrentBackend() != nn.OpenBLAS {
		t.Skip("gonum's pure-Go BLAS allocates goroutines for large products; the claim is for OpenBLAS")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultConfig()
	cfg.Hidden, cfg.Batch = []int{32, 32}, 16
	d, err := New(8, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, o := gaussians(rng, 64, make([]float64, 8)), gaussians(rng, 64, make([]float64, 8))
	d.Step(e, o)
	if n := testing.AllocsPerRun(10, func() { d.Step(e, o) }); n != 0 {
		t.Fatalf("Step allocates %v times", n)
	}
}
