package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
)

func randSlice[T Float](rng *rand.Rand, n int, scale float64) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(scale * rng.NormFloat64())
	}
	return s
}

func TestGemmMatchesNaiveOnEveryBackend(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 7, 5, 9
	for _, be := range []Backend{PureGo, OpenBLAS} {
		if !Available(be) {
			t.Logf("%v not compiled in", be)
			continue
		}
		withBackend(t, be)
		for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			a, b := randSlice[float32](rng, m*k, 1), randSlice[float32](rng, k*n, 1)
			c := randSlice[float32](rng, m*n, 1)
			want := make([]float64, m*n)
			for i := range m {
				for j := range n {
					s := 0.0
					for p := range k {
						ai, bi := i*k+p, p*n+j
						if tr.a {
							ai = p*m + i
						}
						if tr.b {
							bi = j*k + p
						}
						s += float64(a[ai]) * float64(b[bi])
					}
					want[i*n+j] = 2*s + 0.5*float64(c[i*n+j])
				}
			}
			Gemm(tr.a, tr.b, m, n, k, 2, a, b, 0.5, c)
			for i := range c {
				if math.Abs(float64(c[i])-want[i]) > 1e-4 {
					t.Fatalf("%v trans=%v: c[%d]=%g want %g", be, tr, i, c[i], want[i])
				}
			}
		}
	}
}

// withBackend switches the BLAS for one test and restores it afterwards.
func withBackend(t testing.TB, b Backend) {
	t.Helper()
	prev := CurrentBackend()
	if err := SetBackend(b); err != nil {
		t.Skipf("backend %v: %v", b, err)
	}
	t.Cleanup(func() { _ = SetBackend(prev) })
}

func TestSetBackendRejectsUnknown(t *testing.T) {
	if err := SetBackend(Backend(7)); err == nil {
		t.Fatal("SetBackend(7) succeeded")
	}
}

// The environment's OPENBLAS_NUM_THREADS wins over a trainer's choice of one
// thread.
func TestOneBLASThreadRespectsTheEnvironment(t *testing.T) {
	t.Setenv("OPENBLAS_NUM_THREADS", "2")
	if OneBLASThreadUnlessSet() {
		t.Fatal("thread count changed although OPENBLAS_NUM_THREADS is set")
	}
}

func TestMLPForwardByHand(t *testing.T) {
	m, err := NewMLP[float64](rand.New(rand.NewPCG(0, 0)), []int{2, 2, 1}, ReLU, Tanh)
	if err != nil {
		t.Fatal(err)
	}
	copy(m.Layers[0].W, []float64{1, -1, 2, 0.5})
	copy(m.Layers[0].B, []float64{0, -10})
	copy(m.Layers[1].W, []float64{0.25, 3})
	copy(m.Layers[1].B, []float64{0.1})
	x := []float64{3, 1}
	// hidden = relu([3-1, 6+0.5-10]) = [2, 0]; out = tanh(0.5 + 0 + 0.1)
	got := m.Forward(&Tape[float64]{}, x, 1)
	if want := math.Tanh(0.6); math.Abs(got[0]-want) > 1e-15 {
		t.Fatalf("forward = %v, want %v", got[0], want)
	}
}

func TestNewMLPRejectsBadShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(0, 0))
	for _, sizes := range [][]int{nil, {3}, {3, 0, 1}, {-1, 2}} {
		if _, err := NewMLP[float32](rng, sizes, ReLU, Identity); err == nil {
			t.Errorf("NewMLP(%v) succeeded", sizes)
		}
	}
	if _, err := NewMLP[float32](rng, []int{2, 2}, Activation(9), Identity); err == nil {
		t.Error("unknown activation accepted")
	}
}

func TestMLPGradientCheck(t *testing.T) {
	tests := []struct {
		name           string
		sizes          []int
		hidden, output Activation
		extra          bool
	}{
		{"linear", []int{4, 3}, Identity, Identity, false},
		{"relu", []int{5, 7, 6, 3}, ReLU, Identity, false},
		{"tanh", []int{5, 7, 6, 2}, Tanh, Tanh, false},
		{"tanh hidden gradients", []int{4, 6, 5, 1}, Tanh, Identity, true},
		{"relu hidden gradients", []int{4, 6, 5, 2}, ReLU, ReLU, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			m, err := NewMLP[float64](rng, tc.sizes, tc.hidden, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			const rows = 6
			x := randSlice[float64](rng, rows*m.InDim(), 1)
			c := randSlice[float64](rng, rows*m.OutDim(), 1)
			var extra [][]float64
			if tc.extra {
				for _, d := range m.Layers[:len(m.Layers)-1] {
					extra = append(extra, randSlice[float64](rng, rows*d.Out, 1))
				}
			}
			// loss = sum c*out + sum_l extra_l*hidden_l
			tp := &Tape[float64]{}
			loss := func() float64 {
				out := m.Forward(tp, x, rows)
				s := 0.0
				for i := range out {
					s += c[i] * out[i]
				}
				for l, e := range extra {
					for i, h := range tp.Output(l) {
						s += e[i] * h
					}
				}
				return s
			}
			loss()
			m.ZeroGrad()
			dX := make([]float64, len(x))
			m.BackwardWith(tp, c, extra, dX)
			grads := append([]float64(nil), m.Grads()...)
			gradcheck.Check(t, "params", m.Params(), grads, loss, 1e-6)
			gradcheck.Check(t, "input", x, dX, loss, 1e-6)
		})
	}
}

func TestBackwardAccumulates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, _ := NewMLP[float64](rng, []int{3, 4, 2}, Tanh, Identity)
	x, dOut := randSlice[float64](rng, 12, 1), randSlice[float64](rng, 8, 1)
	tp := &Tape[float64]{}
	m.Forward(tp, x, 4)
	m.Backward(tp, dOut, nil)
	once := append([]float64(nil), m.Grads()...)
	m.Backward(tp, dOut, nil)
	for i, g := range m.Grads() {
		if math.Abs(g-2*once[i]) > 1e-12 {
			t.Fatalf("grad %d after two passes = %g, want %g", i, g, 2*once[i])
		}
	}
}

func TestFloat32MatchesFloat64(t *testing.T) {
	m64, _ := NewMLP[float64](rand.New(rand.NewPCG(7, 8)), []int{6, 16, 16, 3}, Tanh, Identity)
	m32, _ := NewMLP[float32](rand.New(rand.NewPCG(7, 8)), []int{6, 16, 16, 3}, Tanh, Identity)
	x64 := randSlice[float64](rand.New(rand.NewPCG(9, 9)), 5*6, 1)
	x32 := make([]float32, len(x64))
	for i, v := range x64 {
		x32[i] = float32(v)
	}
	o64 := m64.Forward(&Tape[float64]{}, x64, 5)
	o32 := m32.Forward(&Tape[float32]{}, x32, 5)
	for i := range o64 {
		if math.Abs(o64[i]-float64(o32[i])) > 1e-5 {
			t.Fatalf("out[%d]: float32 %g, float64 %g", i, o32[i], o64[i])
		}
	}
}

func TestForwardBackwardDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m, _ := NewMLP[float32](rng, []int{48, 64, 64, 12}, ReLU, Identity)
	const rows = 32
	x, dOut := randSlice[float32](rng, rows*48, 1), randSlice[float32](rng, rows*12, 1)
	tp := &Tape[float32]{}
	opt := NewAdam[float32](len(m.Params()), 1e-3)
	step := func() {
		m.ZeroGrad()
		m.Forward(tp, x, rows)
		m.Backward(tp, dOut, nil)
		opt.Step(m.Params(), m.Grads())
	}
	step()
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Fatalf("forward+backward+Adam allocates %v times per step on %v", n, CurrentBackend())
	}
}
