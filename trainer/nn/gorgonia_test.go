package nn

// Issue 5 asked for the trainer's networks on gorgonia; we wrote them by hand
// instead (faster, no allocation per step on OpenBLAS, and the WGAN-GP
// penalty needs a gradient of a gradient, which gorgonia cannot take). The
// tests here keep gorgonia as an independent oracle for Forward, Backward and
// Adam, and BenchmarkMLPAdamStep keeps the speed argument measurable.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gorgoniaMLP is an MLP rebuilt as a gorgonia expression graph with a copy of
// its weights, differentiated by gorgonia's symbolic Grad and run on a tape
// machine built once.
type gorgoniaMLP struct {
	// ws[l] is layer l's weight matrix stored In x Out (gorgonia's x*W
	// convention, the transpose of ours); bs[l] is its bias as a 1 x Out row.
	ws, bs []*gorgonia.Node
	vm     gorgonia.VM
}

// gorgoniaLoss builds a scalar loss on the network output.
type gorgoniaLoss func(g *gorgonia.ExprGraph, out *gorgonia.Node) (*gorgonia.Node, error)

func dtypeOf[T Float]() tensor.Dtype {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// dense wraps data (not a copy) as a rows x cols gorgonia tensor.
func dense[T Float](rows, cols int, data []T) *tensor.Dense {
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data))
}

// newGorgoniaMLP builds m's network on the input x (rows x m.InDim()) with
// loss on top, ready for RunAll.
func newGorgoniaMLP[T Float](tb testing.TB, m *MLP[T], x []T, rows int, loss gorgoniaLoss) *gorgoniaMLP {
	tb.Helper()
	dt := dtypeOf[T]()
	g := gorgonia.NewGraph()
	gm := &gorgoniaMLP{}
	h := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(rows, m.InDim()), gorgonia.WithName("x"),
		gorgonia.WithValue(dense(rows, m.InDim(), append([]T(nil), x[:rows*m.InDim()]...))))
	var err error
	for l, d := range m.Layers {
		wt := make([]T, d.In*d.Out)
		for o := range d.Out {
			for i := range d.In {
				wt[i*d.Out+o] = d.W[o*d.In+i]
			}
		}
		w := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(d.In, d.Out), gorgonia.WithName(fmt.Sprintf("W%d", l)),
			gorgonia.WithValue(dense(d.In, d.Out, wt)))
		b := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(1, d.Out), gorgonia.WithName(fmt.Sprintf("b%d", l)),
			gorgonia.WithValue(dense(1, d.Out, append([]T(nil), d.B...))))
		gm.ws, gm.bs = append(gm.ws, w), append(gm.bs, b)
		if h, err = gorgonia.Mul(h, w); err != nil {
			tb.Fatalf("layer %d: %v", l, err)
		}
		if h, err = gorgonia.BroadcastAdd(h, b, nil, []byte{0}); err != nil {
			tb.Fatalf("layer %d: %v", l, err)
		}
		switch d.Act {
		case ReLU:
			h, err = gorgonia.Rectify(h)
		case Tanh:
			h, err = gorgonia.Tanh(h)
		}
		if err != nil {
			tb.Fatalf("layer %d %v: %v", l, d.Act, err)
		}
	}
	cost, err := loss(g, h)
	if err != nil {
		tb.Fatalf("loss: %v", err)
	}
	if _, err := gorgonia.Grad(cost, gm.learnables()...); err != nil {
		tb.Fatalf("Grad: %v", err)
	}
	gm.vm = gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(gm.learnables()...))
	tb.Cleanup(func() { gm.vm.Close() })
	return gm
}

func (gm *gorgoniaMLP) learnables() gorgonia.Nodes {
	return append(append(gorgonia.Nodes(nil), gm.ws...), gm.bs...)
}

// run does one forward and backward pass; the tape machine must be reset
// before the next.
func (gm *gorgoniaMLP) run(tb testing.TB) {
	tb.Helper()
	if err := gm.vm.RunAll(); err != nil {
		tb.Fatalf("RunAll: %v", err)
	}
}

// params returns the gorgonia network's parameters (or, with grad, their
// gradients) in our slab layout: per layer W row-major Out x In, then b.
func params[T Float](tb testing.TB, gm *gorgoniaMLP, m *MLP[T], grad bool) []T {
	tb.Helper()
	slab := make([]T, 0, len(m.Params()))
	read := func(n *gorgonia.Node) []T {
		v := n.Value()
		if grad {
			var err error
			if v, err = n.Grad(); err != nil {
				tb.Fatalf("%v: %v", n, err)
			}
		}
		return v.Data().([]T)
	}
	for l, d := range m.Layers {
		wt := read(gm.ws[l])
		for o := range d.Out {
			for i := range d.In {
				slab = append(slab, wt[i*d.Out+o])
			}
		}
		slab = append(slab, read(gm.bs[l])...)
	}
	return slab
}

// agreement is the worst disagreement between two arrays: absolute, and
// relative to the larger magnitude of each pair.
type agreement struct{ abs, rel float64 }

func compare[T Float](got, want []T) agreement {
	var a agreement
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		d := math.Abs(g - w)
		a.abs = max(a.abs, d)
		if d > 0 {
			a.rel = max(a.rel, d/max(math.Abs(g), math.Abs(w)))
		}
	}
	return a
}

// dotLoss is sum(out * up): its gradient with respect to out is up itself.
func dotLoss[T Float](rows, cols int, up []T) gorgoniaLoss {
	return func(g *gorgonia.ExprGraph, out *gorgonia.Node) (*gorgonia.Node, error) {
		u := gorgonia.NewMatrix(g, dtypeOf[T](), gorgonia.WithShape(rows, cols), gorgonia.WithName("up"),
			gorgonia.WithValue(dense(rows, cols, up)))
		prod, err := gorgonia.HadamardProd(out, u)
		if err != nil {
			return nil, err
		}
		return gorgonia.Sum(prod)
	}
}

// mseLoss is mean((out - target)^2) over every element.
func mseLoss[T Float](rows, cols int, target []T) gorgoniaLoss {
	return func(g *gorgonia.ExprGraph, out *gorgonia.Node) (*gorgonia.Node, error) {
		tn := gorgonia.NewMatrix(g, dtypeOf[T](), gorgonia.WithShape(rows, cols), gorgonia.WithName("target"),
			gorgonia.WithValue(dense(rows, cols, target)))
		diff, err := gorgonia.Sub(out, tn)
		if err != nil {
			return nil, err
		}
		sq, err := gorgonia.Square(diff)
		if err != nil {
			return nil, err
		}
		return gorgonia.Mean(sq)
	}
}

// mseGrad writes d mean((out - target)^2) / d out into dOut.
func mseGrad[T Float](dOut, out, target []T) {
	scale := 2 / T(len(out))
	for i, o := range out {
		dOut[i] = scale * (o - target[i])
	}
}

var gorgoniaOracleCases = []struct {
	name           string
	hidden, output Activation
}{
	{"relu", ReLU, Identity},
	{"tanh", Tanh, Identity},
	{"tanh squashed", Tanh, Tanh},
}

func TestMLPMatchesGorgonia(t *testing.T) {
	const rows, tol = 5, 1e-10
	sizes := []int{7, 16, 16, 3}
	for _, tc := range gorgoniaOracleCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			m, err := NewMLP[float64](rng, sizes, tc.hidden, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			x := randSlice[float64](rng, rows*m.InDim(), 1)
			up := randSlice[float64](rng, rows*m.OutDim(), 1)
			// After a tape-machine run, the output node's Value() can hold
			// whatever a later instruction wrote into the register it
			// shared (with a tanh output it does): only a Read copies the
			// output out as it was computed.
			var gout gorgonia.Value
			loss := func(g *gorgonia.ExprGraph, out *gorgonia.Node) (*gorgonia.Node, error) {
				gorgonia.Read(out, &gout)
				return dotLoss(rows, m.OutDim(), up)(g, out)
			}
			gm := newGorgoniaMLP(t, m, x, rows, loss)
			gm.run(t)

			tp := &Tape[float64]{}
			out := m.Forward(tp, x, rows)
			m.ZeroGrad()
			m.Backward(tp, up, nil)

			fwd := compare(out, gout.Data().([]float64))
			grad := compare(m.Grads(), params(t, gm, m, true))
			t.Logf("forward: max abs %.1e rel %.1e; gradients (%d): max abs %.1e rel %.1e",
				fwd.abs, fwd.rel, len(m.Grads()), grad.abs, grad.rel)
			if fwd.rel > tol || grad.rel > tol {
				t.Errorf("disagreement with gorgonia above %g: forward %+v, gradients %+v", tol, fwd, grad)
			}
		})
	}
}

// TestAdamTrainingMatchesGorgonia trains the same network with our Adam and
// gorgonia's AdamSolver on an MSE loss and compares the parameters after
// every step: the two sides of BenchmarkMLPAdamStep do the same work.
func TestAdamTrainingMatchesGorgonia(t *testing.T) {
	const rows, steps, lr, tol = 5, 4, 1e-2, 1e-10
	for _, tc := range gorgoniaOracleCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, 14))
			m, err := NewMLP[float64](rng, []int{7, 16, 16, 3}, tc.hidden, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			x := randSlice[float64](rng, rows*m.InDim(), 1)
			target := randSlice[float64](rng, rows*m.OutDim(), 1)
			gm := newGorgoniaMLP(t, m, x, rows, mseLoss(rows, m.OutDim(), target))
			solver := gorgonia.NewAdamSolver(gorgonia.WithLearnRate(lr))
			opt := NewAdam[float64](len(m.Params()), lr)
			tp, dOut := &Tape[float64]{}, make([]float64, rows*m.OutDim())
			for s := range steps {
				mseGrad(dOut, m.Forward(tp, x, rows), target)
				m.ZeroGrad()
				m.Backward(tp, dOut, nil)
				opt.Step(m.Params(), m.Grads())

				gm.run(t)
				if err := solver.Step(gorgonia.NodesToValueGrads(gm.learnables())); err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
				gm.vm.Reset()

				// The parameters moved by about lr per step; relative to
				// that, the two updates must agree to rounding.
				a := compare(m.Params(), params(t, gm, m, false))
				t.Logf("step %d: parameters max abs diff %.1e", s, a.abs)
				if a.abs > tol*lr {
					t.Fatalf("step %d: parameters differ from gorgonia's by %.3e (> %g)", s, a.abs, tol*lr)
				}
			}
		})
	}
}

// BenchmarkMLPAdamStep is the measurement behind the choice of hand-written
// networks over gorgonia (go-deps.md): one forward, backward and Adam step of
// the 48->256->256->12 ReLU MLP on a batch of 256 with an MSE loss, float32.
// Both sides use the BLAS that nn uses (OpenBLAS in cgo builds, gonum's pure
// Go BLAS with -tags purego or CGO_ENABLED=0).
func BenchmarkMLPAdamStep(b *testing.B) {
	const rows, lr = 256, 3e-4
	setup := func(b *testing.B) (m *MLP[float32], x, target []float32) {
		rng := rand.New(rand.NewPCG(21, 22))
		m, err := NewMLP[float32](rng, []int{48, 256, 256, 12}, ReLU, Identity)
		if err != nil {
			b.Fatal(err)
		}
		return m, randSlice[float32](rng, rows*m.InDim(), 1), randSlice[float32](rng, rows*m.OutDim(), 1)
	}
	// The first step sizes the tape and the optimiser state on both sides:
	// it is set-up, not part of the steady state measured.
	measureSteps := func(b *testing.B, step func()) {
		step()
		b.ReportAllocs()
		for b.Loop() {
			step()
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	}

	b.Run("nn", func(b *testing.B) {
		m, x, target := setup(b)
		opt := NewAdam[float32](len(m.Params()), lr)
		tp, dOut := &Tape[float32]{}, make([]float32, rows*m.OutDim())
		step := func() {
			mseGrad(dOut, m.Forward(tp, x, rows), target)
			m.ZeroGrad()
			m.Backward(tp, dOut, nil)
			opt.Step(m.Params(), m.Grads())
		}
		measureSteps(b, step)
	})

	b.Run("gorgonia", func(b *testing.B) {
		same, ok := active.f32.(gorgonia.BLAS)
		if !ok {
			b.Fatalf("nn's %v BLAS (%T) lacks gorgonia's complex routines", CurrentBackend(), active.f32)
		}
		prev := gorgonia.WhichBLAS()
		gorgonia.Use(same)
		b.Cleanup(func() { gorgonia.Use(prev) })

		m, x, target := setup(b)
		gm := newGorgoniaMLP(b, m, x, rows, mseLoss(rows, m.OutDim(), target))
		solver := gorgonia.NewAdamSolver(gorgonia.WithLearnRate(lr))
		learnables := gorgonia.NodesToValueGrads(gm.learnables())
		step := func() {
			gm.run(b)
			if err := solver.Step(learnables); err != nil {
				b.Fatal(err)
			}
			gm.vm.Reset()
		}
		measureSteps(b, step)
	})
}
