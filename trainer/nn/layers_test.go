package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
)

// dot is sum(a*b), the test losses' way of turning an output into a scalar
// whose gradient with respect to the output is b.
func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// blockCase is one block under a gradient check: build returns the arena,
// the input, a forward that maps the input to the output, and a backward
// that returns dL/dx for dL/dy (after adding the parameter gradients).
type blockCase struct {
	name  string
	tol   float64
	build func(rng *rand.Rand) (arena *Arena[float64], x []float64, fwd func() []float64, bwd func(dy []float64) []float64)
}

func blockCases() []blockCase {
	const rows = 6
	return []blockCase{
		{"linear", 1e-7, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			a := &Arena[float64]{}
			l := NewLinear(a, "l/w", "l/b", 5, 4, XavierUniform(5, 4), Normal(0.5))
			a.Alloc(rng)
			x := randSlice[float64](rng, rows*5, 1)
			return a, x, func() []float64 { return l.Forward(x, rows) }, func(dy []float64) []float64 { return l.Backward(dy, true) }
		}},
		{"layernorm", 1e-6, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			a := &Arena[float64]{}
			n := NewLayerNorm(a, "ln", 7)
			a.Alloc(rng)
			for i := range a.Params() { // away from the ones/zeros init
				a.Params()[i] += 0.5 * rng.NormFloat64()
			}
			x := randSlice[float64](rng, rows*7, 2)
			return a, x, func() []float64 { return n.Forward(x, rows) }, n.Backward
		}},
		{"gelu", 1e-6, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			g := &GELU[float64]{}
			x := append(randSlice[float64](rng, 20, 2), -6, -1e-3, 0, 3, 8)
			return &Arena[float64]{}, x, func() []float64 { return g.Forward(x) }, g.Backward
		}},
		{"mish", 1e-6, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			m := &Mish[float64]{}
			x := append(randSlice[float64](rng, 20, 3), -15, -1e-3, 0, 19.5, 25)
			return &Arena[float64]{}, x, func() []float64 { return m.Forward(x) }, m.Backward
		}},
		{"mean pool", 1e-7, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			p := &MeanPool[float64]{}
			x := randSlice[float64](rng, 3*4*5, 1)
			return &Arena[float64]{}, x, func() []float64 { return p.Forward(x, 3, 4, 5) }, p.Backward
		}},
		{"set attention", 1e-6, func(rng *rand.Rand) (*Arena[float64], []float64, func() []float64, func([]float64) []float64) {
			a := &Arena[float64]{}
			s, err := NewSetAttention(a, "attn", 8, 2, Normal(0.1))
			if err != nil {
				panic(err)
			}
			a.Alloc(rng)
			for i := range a.Params() { // sharper softmax than the init gives
				a.Params()[i] *= 2
			}
			const sets, tokens = 3, 5
			x := randSlice[float64](rng, sets*tokens*8, 1)
			return a, x, func() []float64 { return s.Forward(x, sets, tokens) }, s.Backward
		}},
	}
}

// TestBlockGradients checks every block's parameter and input gradients
// against float64 central differences.
func TestBlockGradients(t *testing.T) {
	for _, tc := range blockCases() {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			a, x, fwd, bwd := tc.build(rng)
			c := randSlice[float64](rng, len(fwd()), 1)
			loss := func() float64 { return dot(fwd(), c) }
			loss()
			a.ZeroGrad()
			dx := append([]float64(nil), bwd(c)...)
			pg := append([]float64(nil), a.Grads()...)
			gradcheck.Check(t, "input", x, dx, loss, tc.tol)
			if len(pg) > 0 {
				gradcheck.Check(t, "params", a.Params(), pg, loss, tc.tol)
			}
		})
	}
}

// TestBlockGradientCheckCatchesBrokenBackward perturbs each block's analytic
// gradients by 1% of their largest entry, one entry at a time, and expects
// the check to flag every one.
func TestBlockGradientCheckCatchesBrokenBackward(t *testing.T) {
	for _, tc := range blockCases() {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			_, x, fwd, bwd := tc.build(rng)
			c := randSlice[float64](rng, len(fwd()), 1)
			loss := func() float64 { return dot(fwd(), c) }
			loss()
			dx := append([]float64(nil), bwd(c)...)
			for _, i := range []int{0, len(dx) / 2, len(dx) - 1} {
				if r := gradcheck.Compare(x, gradcheck.Broken(dx, i, 0.01), loss); r.Worst <= tc.tol {
					t.Errorf("entry %d off by 1%%: worst error %.2e not above the tolerance %.0e", i, r.Worst, tc.tol)
				}
			}
		})
	}
}

func TestLayerNormForwardByHand(t *testing.T) {
	a := &Arena[float64]{}
	n := NewLayerNorm(a, "ln", 4)
	a.Alloc(rand.New(rand.NewPCG(0, 0)))
	copy(n.Gamma.W, []float64{1, 2, 1, 1})
	copy(n.Beta.W, []float64{0, 0, 0, 10})
	y := n.Forward([]float64{1, 2, 3, 4}, 1)
	// mean 2.5, biased variance 1.25
	s := 1 / math.Sqrt(1.25+LayerNormEps)
	want := []float64{-1.5 * s, 2 * -0.5 * s, 0.5 * s, 1.5*s + 10}
	for i := range want {
		if math.Abs(y[i]-want[i]) > 1e-12 {
			t.Fatalf("y = %v, want %v", y, want)
		}
	}
}

func TestActivationsByHand(t *testing.T) {
	g, m := &GELU[float64]{}, &Mish[float64]{}
	x := []float64{-3, -0.5, 0, 0.7, 2, 30}
	gy, my := g.Forward(x), m.Forward(x)
	for i, v := range x {
		wantG := 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		wantM := v * math.Tanh(math.Log1p(math.Exp(v)))
		if math.Abs(gy[i]-wantG) > 1e-14 || math.Abs(my[i]-wantM) > 1e-12*max(1, math.Abs(v)) {
			t.Errorf("x=%v: gelu %v want %v; mish %v want %v", v, gy[i], wantG, my[i], wantM)
		}
	}
}

func TestEmbeddingGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a := &Arena[float64]{}
	e := NewEmbedding(a, "emb", 5, 3, Normal(1))
	a.Alloc(rng)
	ids := []int32{4, 0, 4, 2}
	c := randSlice[float64](rng, len(ids)*3, 1)
	loss := func() float64 { return dot(e.Forward(ids), c) }
	loss()
	a.ZeroGrad()
	e.Backward(c)
	gradcheck.Check(t, "table", a.Params(), append([]float64(nil), a.Grads()...), loss, 1e-8)
	for j := range 3 { // row 4 was used twice, row 1 never
		if want := c[j] + c[6+j]; math.Abs(e.Table.G[12+j]-want) > 1e-15 || e.Table.G[3+j] != 0 {
			t.Fatalf("table gradient %v", e.Table.G)
		}
	}
}

// Attention over a set must not depend on the order of its tokens: permuting
// the tokens permutes the output rows the same way.
func TestSetAttentionIsPermutationEquivariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := &Arena[float32]{}
	s, err := NewSetAttention(a, "attn", 8, 2, Normal(0.1))
	if err != nil {
		t.Fatal(err)
	}
	a.Alloc(rng)
	const sets, tokens, w = 2, 6, 8
	x := randSlice[float32](rng, sets*tokens*w, 1)
	y := append([]float32(nil), s.Forward(x, sets, tokens)...)
	perm := rng.Perm(tokens)
	xp := make([]float32, len(x))
	for b := range sets {
		for k, from := range perm {
			copy(xp[(b*tokens+k)*w:(b*tokens+k+1)*w], x[(b*tokens+from)*w:(b*tokens+from+1)*w])
		}
	}
	yp := s.Forward(xp, sets, tokens)
	for b := range sets {
		for k, from := range perm {
			for j := range w {
				got, want := yp[(b*tokens+k)*w+j], y[(b*tokens+from)*w+j]
				if math.Abs(float64(got-want)) > 1e-5 {
					t.Fatalf("set %d token %d (from %d) col %d: %v, want %v", b, k, from, j, got, want)
				}
			}
		}
	}
}

func TestNewSetAttentionRejectsUnevenHeads(t *testing.T) {
	if _, err := NewSetAttention(&Arena[float32]{}, "a", 10, 3, Zeros); err == nil {
		t.Fatal("10 wide with 3 heads accepted")
	}
}

func TestArenaLaysOutParamsInOrder(t *testing.T) {
	a := &Arena[float32]{}
	l := NewLinear(a, "l/w", "l/b", 2, 3, Ones, Zeros)
	n := NewLayerNorm(a, "n", 3)
	a.Alloc(rand.New(rand.NewPCG(0, 0)))
	if len(a.Params()) != 6+3+3+3 {
		t.Fatalf("slab of %d", len(a.Params()))
	}
	l.B.W[0] = 7
	n.Beta.W[2] = 9
	if a.Params()[6] != 7 || a.Params()[14] != 9 {
		t.Fatalf("params %v do not view the slab", a.Params())
	}
	if p, ok := a.Lookup("n/gamma"); !ok || p.W[0] != 1 {
		t.Fatalf("lookup n/gamma: %v %v", p, ok)
	}
	for _, p := range a.List() {
		if &p.W[0] == &p.G[0] {
			t.Fatal("params and grads share memory")
		}
	}
}

// A step through every block (forward, backward, Adam over the arena) must
// not allocate once the buffers have grown.
func TestBlocksDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	a := &Arena[float32]{}
	const sets, tokens, w = 4, 8, 16
	emb := NewEmbedding(a, "e", 10, w, Normal(1))
	ln := NewLayerNorm(a, "ln", w)
	attn, _ := NewSetAttention(a, "attn", w, 2, Zeros)
	lin := NewLinear(a, "l/w", "l/b", w, 32, XavierUniform(w, 32), Zeros)
	var gelu GELU[float32]
	var mish Mish[float32]
	var pool MeanPool[float32]
	a.Alloc(rng)
	opt := NewAdam[float32](len(a.Params()), 1e-3)
	ids := make([]int32, sets*tokens)
	for i := range ids {
		ids[i] = int32(rng.IntN(10))
	}
	step := func() {
		a.ZeroGrad()
		h := ln.Forward(emb.Forward(ids), sets*tokens)
		h = lin.Forward(attn.Forward(h, sets, tokens), sets*tokens)
		y := pool.Forward(mish.Forward(gelu.Forward(h)), sets, tokens, 32)
		d := pool.Backward(y)
		d = attn.Backward(lin.Backward(gelu.Backward(mish.Backward(d)), true))
		emb.Backward(ln.Backward(d))
		opt.Step(a.Params(), a.Grads())
	}
	step()
	if n := testing.AllocsPerRun(10, step); n != 0 {
		t.Fatalf("a step allocates %v times on %v", n, CurrentBackend())
	}
}
