package skills

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
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

// The policy acts as tanh of the mean rows of the full network on [obs ; z].
func TestPolicyMatchesFullNetwork(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const obsDim, latentDim = 171, 128
	m := randomMLP(rng, ActReLU, obsDim+latentDim, 256, 256, 2*NumJoints)
	p, err := NewPolicy(m, obsDim, latentDim, NumJoints)
	if err != nil {
		t.Fatal(err)
	}
	act := make([]float32, NumJoints)
	if err := p.Act(randomVec(rng, obsDim), act); !errors.Is(err, ErrNoLatent) {
		t.Fatalf("Act before SetLatent: %v", err)
	}
	for range 3 { // switching latents must fully replace the previous one
		z := randomVec(rng, latentDim)
		if err := p.SetLatent(z); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			obs := randomVec(rng, obsDim)
			want := referenceForward(m, append(append([]float32(nil), obs...), z...))
			if err := p.Act(obs, act); err != nil {
				t.Fatal(err)
			}
			for i := range act {
				if !closeTo(act[i], math.Tanh(want[i]), 1e-4) {
					t.Fatalf("action %d = %v, want tanh(%v) = %v", i, act[i], want[i], math.Tanh(want[i]))
				}
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.Act(act[:0:0], act) }); n != 0 {
		t.Errorf("Act (error path) allocates %v times", n)
	}
}

func TestSingleLayerPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	m := randomMLP(rng, ActNone, 48+4, 2*NumJoints)
	p, err := NewPolicy(m, 48, 4, NumJoints)
	if err != nil {
		t.Fatal(err)
	}
	z, obs, act := randomVec(rng, 4), randomVec(rng, 48), make([]float32, NumJoints)
	if err := p.SetLatent(z); err != nil {
		t.Fatal(err)
	}
	if err := p.Act(obs, act); err != nil {
		t.Fatal(err)
	}
	want := referenceForward(m, append(append([]float32(nil), obs...), z...))
	for i := range act {
		if !closeTo(act[i], math.Tanh(want[i]), 1e-5) {
			t.Fatalf("action %d = %v, want %v", i, act[i], math.Tanh(want[i]))
		}
	}
}

func TestPolicyDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p, err := NewPolicy(randomMLP(rng, ActReLU, 171+128, 256, 256, 24), 171, 128, 12)
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
		t.Errorf("Act allocates %v times", n)
	}
	if n := testing.AllocsPerRun(50, func() {
		if err := p.SetLatent(z); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SetLatent allocates %v times", n)
	}
}

func TestPolicyContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	tests := []struct {
		name string
		net  MLP
		obs  int
		lat  int
	}{
		{"input size", randomMLP(rng, ActReLU, 50, 8, 24), 48, 3},
		{"head without log-std", randomMLP(rng, ActReLU, 56, 8, 12), 48, 8},
		{"squashed head", func() MLP { m := randomMLP(rng, ActReLU, 56, 8, 24); m.Layers[1].Act = ActTanh; return m }(), 48, 8},
		{"negative latent", randomMLP(rng, ActReLU, 48, 8, 24), 49, -1},
	}
	for _, tt := range tests {
		if _, err := NewPolicy(tt.net, tt.obs, tt.lat, NumJoints); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	p, err := NewPolicy(randomMLP(rng, ActReLU, 56, 8, 24), 48, 8, NumJoints)
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
	u, err := NewPolicy(randomMLP(rng, ActReLU, 48, 8, 24), 48, 0, NumJoints)
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
