package skills

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var kernels = []struct {
	name string
	mv   matvec
}{{"vek", matvecVek}, {"go4row", matvecGo}, {"blas32", matvecBLAS32}}

func closeTo(got float32, want float64, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol*max(1, math.Abs(want))
}

func TestEvaluatorMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nets := []struct {
		name  string
		act   Activation
		sizes []int
	}{
		{"policy-sized relu", ActReLU, []int{299, 256, 256, 24}},
		{"odd widths tanh", ActTanh, []int{7, 33, 5, 3}},
		{"elu", ActELU, []int{50, 65, 1}},
		{"gelu", ActGELU, []int{31, 97, 2}},
		{"single layer", ActNone, []int{4, 3}},
		{"row count not a multiple of 4", ActReLU, []int{40, 7, 6}},
	}
	for _, nt := range nets {
		m := randomMLP(rng, nt.act, nt.sizes...)
		m.Layers[len(m.Layers)-1].Act = nt.act // also exercise the activation on the output
		for _, k := range kernels {
			t.Run(nt.name+"/"+k.name, func(t *testing.T) {
				e, err := NewEvaluator(m)
				if err != nil {
					t.Fatal(err)
				}
				e.mv = k.mv
				for range 5 {
					x := randomVec(rng, nt.sizes[0])
					want := referenceForward(m, x)
					got, err := e.Forward(x)
					if err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if !closeTo(got[i], want[i], 1e-4) {
							t.Fatalf("output %d = %v, reference %v", i, got[i], want[i])
						}
					}
				}
			})
		}
	}
}

func TestActivations(t *testing.T) {
	tests := []struct {
		act  Activation
		x    float32
		want float64
	}{
		{ActNone, -2, -2},
		{ActReLU, -2, 0},
		{ActReLU, 3, 3},
		{ActTanh, 0.5, math.Tanh(0.5)},
		{ActELU, -1, math.Exp(-1) - 1},
		{ActELU, 2, 2},
		{ActGELU, 1, 0.8413447460685429},    // Phi(1)
		{ActGELU, -1, -0.15865525393145707}, // -Phi(-1)
	}
	for _, tt := range tests {
		if got := tt.act.apply(tt.x); !closeTo(got, tt.want, 1e-6) {
			t.Errorf("%v(%v) = %v, want %v", tt.act, tt.x, got, tt.want)
		}
	}
	for a := ActNone; a <= ActGELU; a++ {
		js, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back Activation
		if err := json.Unmarshal(js, &back); err != nil || back != a {
			t.Errorf("%v -> %s -> %v, %v", a, js, back, err)
		}
	}
	var a Activation
	if err := json.Unmarshal([]byte(`"swish"`), &a); err == nil {
		t.Error("unknown activation accepted")
	}
	if _, err := json.Marshal(Activation(99)); err == nil {
		t.Error("marshalled an unknown activation")
	}
}

func TestMLPValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tests := map[string]func(*MLP){
		"no layers": func(m *MLP) { m.Layers = nil },
		"short W":   func(m *MLP) { m.Layers[0].W = m.Layers[0].W[1:] },
		"short B":   func(m *MLP) { m.Layers[1].B = m.Layers[1].B[1:] },
		"chain": func(m *MLP) {
			m.Layers[1].In++
			m.Layers[1].W = append(m.Layers[1].W, make([]float32, m.Layers[1].Out)...)
		},
		"zero width":     func(m *MLP) { m.Layers[1].Out = 0 },
		"huge width":     func(m *MLP) { m.Layers[0].In = 1 << 20 },
		"activation":     func(m *MLP) { m.Layers[0].Act = 17 },
		"NaN weight":     func(m *MLP) { m.Layers[0].W[3] = float32(math.NaN()) },
		"Inf bias":       func(m *MLP) { m.Layers[1].B[0] = float32(math.Inf(-1)) },
		"negative width": func(m *MLP) { m.Layers[0].In = -4 },
	}
	for name, f := range tests {
		m := randomMLP(rng, ActReLU, 5, 6, 4)
		f(&m)
		if _, err := NewEvaluator(m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	e, _ := NewEvaluator(randomMLP(rng, ActReLU, 5, 6, 4))
	if _, err := e.Forward(make([]float32, 4)); !errors.Is(err, ErrDimMismatch) {
		t.Errorf("short input: %v", err)
	}
}

// referenceAct is the deployed action of the full network m on x, computed
// independently of Policy: tanh of the mean rows of a single Gaussian, or of
// the component with the largest logit of a mixture of k, and the margin of
// that logit over the runner-up (+Inf for a single Gaussian), by which a
// float32 evaluation may pick another component when it is tiny.
func referenceAct(m MLP, k, actDim int, x []float32) (act []float64, component int, margin float64) {
	out := referenceForward(m, x)
	margin = math.Inf(1)
	if k > 1 {
		logits := out[2*k*actDim : 2*k*actDim+k]
		for c, l := range logits {
			if l > logits[component] {
				component = c
			}
		}
		for c, l := range logits {
			if c != component {
				margin = min(margin, logits[component]-l)
			}
		}
	}
	for _, v := range out[component*actDim : (component+1)*actDim] {
		act = append(act, math.Tanh(v))
	}
	return act, component, margin
}

// The policy acts as the full network on [obs ; z] says (referenceAct), for
// single Gaussians and mixtures, whatever the depth and latent size; a
// mixture's choice of component follows the input.
func TestPolicyMatchesFullNetwork(t *testing.T) {
	tests := []struct {
		name              string
		obsDim, latentDim int
		hidden            []int
		components        int
	}{
		{"single Gaussian", 171, 128, []int{256, 256}, 1},
		{"single Gaussian, components 0", 48, 8, []int{32}, 0},
		{"single layer", 48, 4, nil, 1},
		{"mixture of 3", 171, 16, []int{64, 64}, 3},
		{"mixture of 4, single layer", 48, 4, nil, 4},
		{"mixture of 2, unconditioned", 48, 0, []int{32}, 2},
		{"mixture of 16", 48, 8, []int{32}, MaxComponents},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			sizes := slices.Concat([]int{tt.obsDim + tt.latentDim}, tt.hidden, []int{HeadOutputs(NumJoints, tt.components)})
			m := randomMLP(rng, ActReLU, sizes...)
			// randomMLP's small weights leave the later layers to their biases;
			// unit-variance weights make the output, and a mixture's winning
			// component with it, depend on the input.
			for _, l := range m.Layers {
				for i := range l.W {
					l.W[i] *= float32(math.Sqrt(float64(l.In)))
				}
			}
			p, err := NewPolicy(m, tt.obsDim, tt.latentDim, NumJoints, tt.components)
			if err != nil {
				t.Fatal(err)
			}
			act := make([]float32, NumJoints)
			if err := p.Act(randomVec(rng, tt.obsDim), act); tt.latentDim > 0 && !errors.Is(err, ErrNoLatent) {
				t.Fatalf("Act before SetLatent: %v", err)
			}
			chosen := map[int]bool{}
			for range 3 { // switching latents must fully replace the previous one
				z := randomVec(rng, tt.latentDim)
				if err := p.SetLatent(z); err != nil {
					t.Fatal(err)
				}
				for range 8 {
					obs := randomVec(rng, tt.obsDim)
					want, c, margin := referenceAct(m, tt.components, NumJoints, slices.Concat(obs, z))
					if margin < 1e-4 {
						continue // a near tie: float32 rounding may pick either
					}
					chosen[c] = true
					if err := p.Act(obs, act); err != nil {
						t.Fatal(err)
					}
					for j := range act {
						if !closeTo(act[j], want[j], 1e-4) {
							t.Fatalf("action %d = %v, want %v (component %d)", j, act[j], want[j], c)
						}
					}
				}
			}
			if tt.components > 1 && len(chosen) < 2 {
				t.Errorf("every input chose component %v: the test does not see the choice change", chosen)
			}
			if n := testing.AllocsPerRun(100, func() { _ = p.Act(act[:0:0], act) }); n != 0 {
				t.Errorf("Act (error path) allocates %v times", n)
			}
		})
	}
}

// A mixture acts with the mean of the component with the largest logit, the
// lowest such component on a tie, and NaN when a logit is NaN (the choice is
// undefined; the runtime refuses a NaN action). The log-std rows, here far
// larger than any logit, play no part.
func TestMixtureChoosesLargestLogit(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name   string
		logits []float32
		want   int // the component acted on; -1: NaN
	}{
		{"largest last", []float32{0, 1, 2}, 2},
		{"largest first", []float32{5, 1, 2}, 0},
		{"tie picks the lowest", []float32{1, 3, 3}, 1},
		{"all equal", []float32{-2, -2, -2}, 0},
		{"+Inf", []float32{0, inf, 1}, 1},
		{"-Inf but the last", []float32{-inf, -inf, -1}, 2},
		{"NaN first", []float32{nan, 1, 2}, -1},
		{"NaN after the largest", []float32{0, 9, nan}, -1},
	}
	const obsDim, k = 3, 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := Dense{In: obsDim, Out: HeadOutputs(NumJoints, k), W: make([]float32, obsDim*HeadOutputs(NumJoints, k))}
			head.B = make([]float32, head.Out)
			for c := range k {
				for j := range NumJoints {
					head.B[c*NumJoints+j] = float32(math.Atanh(0.1 * float64(c+1)))
					head.B[(k+c)*NumJoints+j] = 100
				}
			}
			p, err := NewPolicy(MLP{Layers: []Dense{head}}, obsDim, 0, NumJoints, k)
			if err != nil {
				t.Fatal(err)
			}
			// NewPolicy refuses non-finite weights, so the logits go straight into the evaluator's head.
			copy(p.eval.layers[0].b[k*NumJoints:], tt.logits)
			act := make([]float32, NumJoints)
			if err := p.Act(make([]float32, obsDim), act); err != nil {
				t.Fatal(err)
			}
			for j, a := range act {
				if tt.want < 0 && !isNaN32(a) || tt.want >= 0 && !closeTo(a, 0.1*float64(tt.want+1), 1e-6) {
					t.Fatalf("action %d = %v, want component %d's", j, a, tt.want)
				}
			}
		})
	}
}

func TestHeadOutputs(t *testing.T) {
	for _, tt := range []struct{ actDim, components, want int }{
		{12, -1, 24}, {12, 0, 24}, {12, 1, 24}, {12, 2, 50}, {12, 3, 75}, {12, MaxComponents, 400}, {1, 2, 6},
	} {
		if got := HeadOutputs(tt.actDim, tt.components); got != tt.want {
			t.Errorf("HeadOutputs(%d, %d) = %d, want %d", tt.actDim, tt.components, got, tt.want)
		}
		if k, err := HeadComponents(tt.want, tt.actDim); err != nil || k != max(1, tt.components) {
			t.Errorf("HeadComponents(%d, %d) = %d, %v; want %d", tt.want, tt.actDim, k, err, max(1, tt.components))
		}
	}
	for _, tt := range []struct{ outputs, actDim int }{{25, 12}, {23, 12}, {0, 12}, {76, 12}, {425, 12}, {24, 0}, {-50, 12}} {
		if k, err := HeadComponents(tt.outputs, tt.actDim); err == nil {
			t.Errorf("HeadComponents(%d, %d) = %d, want an error", tt.outputs, tt.actDim, k)
		}
	}
}

func TestPolicyDoesNotAllocate(t *testing.T) {
	for _, k := range []int{1, 4} {
		rng := rand.New(rand.NewPCG(9, 10))
		p, err := NewPolicy(randomMLP(rng, ActReLU, 171+128, 256, 256, HeadOutputs(12, k)), 171, 128, 12, k)
		if err != nil {
			t.Fatal(err)
		}
		z, obs, act := randomVec(rng, 128), randomVec(rng, 171), make([]float32, 12)
		if err := p.SetLatent(z); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(200, func() {
			if err := p.Act(obs, act); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%d components: Act allocates %v times", k, n)
		}
		if n := testing.AllocsPerRun(50, func() {
			if err := p.SetLatent(z); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%d components: SetLatent allocates %v times", k, n)
		}
	}
}

func TestPolicyContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	mixture3 := HeadOutputs(NumJoints, 3)
	tests := []struct {
		name       string
		net        MLP
		obs, lat   int
		components int
		want       string // in the error
	}{
		{"input size", randomMLP(rng, ActReLU, 50, 8, 24), 48, 3, 1, "policy input is 50"},
		{"head without log-std", randomMLP(rng, ActReLU, 56, 8, 12), 48, 8, 1, "want mean and log-std of 12 actions (24)"},
		{"squashed head", func() MLP { m := randomMLP(rng, ActReLU, 56, 8, 24); m.Layers[1].Act = ActTanh; return m }(), 48, 8, 1, "activation is tanh"},
		{"squashed mixture head", func() MLP { m := randomMLP(rng, ActReLU, 56, 8, mixture3); m.Layers[1].Act = ActTanh; return m }(), 48, 8, 3, "activation is tanh"},
		{"negative latent", randomMLP(rng, ActReLU, 48, 8, 24), 49, -1, 1, "latent -1"},
		{"mixture head as a single Gaussian", randomMLP(rng, ActReLU, 56, 8, mixture3), 48, 8, 1, "head has 75 outputs, want mean and log-std"},
		{"mixture head as components 0", randomMLP(rng, ActReLU, 56, 8, mixture3), 48, 8, 0, "head has 75 outputs, want mean and log-std"},
		{"single Gaussian as a mixture", randomMLP(rng, ActReLU, 56, 8, 24), 48, 8, 3, "head has 24 outputs, want means, log-stds and logits of a 3-component mixture of 12 actions (75)"},
		{"mixture of another size", randomMLP(rng, ActReLU, 56, 8, mixture3), 48, 8, 4, "head has 75 outputs, want means, log-stds and logits of a 4-component mixture of 12 actions (100)"},
		{"mixture without logits", randomMLP(rng, ActReLU, 56, 8, 3*24), 48, 8, 3, "head has 72 outputs"},
		{"17 components", randomMLP(rng, ActReLU, 56, 8, HeadOutputs(NumJoints, 17)), 48, 8, 17, "17 mixture components, want 0..16"},
		{"negative components", randomMLP(rng, ActReLU, 56, 8, 24), 48, 8, -1, "-1 mixture components, want 0..16"},
	}
	for _, tt := range tests {
		_, err := NewPolicy(tt.net, tt.obs, tt.lat, NumJoints, tt.components)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
	p, err := NewPolicy(randomMLP(rng, ActReLU, 56, 8, 24), 48, 8, NumJoints, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetLatent(make([]float32, 7)); !errors.Is(err, ErrDimMismatch) {
		t.Errorf("short latent: %v", err)
	}
	bad := make([]float32, 8)
	bad[2] = float32(math.NaN())
	if err := p.SetLatent(bad); !errors.Is(err, ErrNonFiniteLatent) {
		t.Errorf("NaN latent: %v", err)
	}
	// An unconditioned policy (latent size 0) acts without SetLatent.
	u, err := NewPolicy(randomMLP(rng, ActReLU, 48, 8, 24), 48, 0, NumJoints, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Act(randomVec(rng, 48), make([]float32, NumJoints)); err != nil {
		t.Errorf("unconditioned policy: %v", err)
	}
}

// Every matrix-product kernel against a float64 product, over shapes that
// cover the assembly's 4x16 tiles, a last row on its own, columns past the last
// multiple of 16 and products with fewer than 16 columns or 4 rows.
func TestMatmulKernels(t *testing.T) {
	kernels := map[string]matmul{"default": defaultMatmul, "go": matmulGo}
	if asmMatmul != nil {
		kernels["asm"] = asmMatmul
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for name, mm := range kernels {
		for _, m := range []int{1, 2, 3, 4, 5, 8, 9, 32} {
			for _, n := range []int{1, 3, 16, 48, 129} {
				for _, p := range []int{1, 7, 15, 16, 17, 32, 40, 384} {
					x, w := randomVec(rng, m*n), randomVec(rng, n*p)
					// Stale values in dst must not leak into the product.
					dst := randomVec(rng, m*p+3)
					guard := append([]float32(nil), dst[m*p:]...)
					mm(dst, x, w, n, p)
					for i := range m {
						for j := range p {
							want := 0.0
							for k := range n {
								want += float64(x[i*n+k]) * float64(w[k*p+j])
							}
							if got := float64(dst[i*p+j]); math.Abs(got-want) > 1e-5*(1+math.Abs(want))*math.Sqrt(float64(n)) {
								t.Fatalf("%s %dx%d times %dx%d: [%d,%d] = %g, want %g", name, m, n, n, p, i, j, got, want)
							}
						}
					}
					if !slices.Equal(dst[m*p:], guard) {
						t.Fatalf("%s %dx%d times %dx%d wrote past the product", name, m, n, n, p)
					}
				}
			}
		}
	}
}
