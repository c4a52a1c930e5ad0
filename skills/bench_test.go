package skills

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/viterin/vek/vek32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// The benchmark network of the brief: [171 obs ; 128 latent] -> 256 -> 256 -> 12.
var benchSizes = []int{171 + 128, 256, 256, 12}

func matvecBLAS32(dst, w, x []float32) {
	n := len(x)
	blas32.Gemv(blas.NoTrans, 1,
		blas32.General{Rows: len(dst), Cols: n, Stride: n, Data: w},
		blas32.Vector{N: n, Inc: 1, Data: x}, 0,
		blas32.Vector{N: len(dst), Inc: 1, Data: dst})
}

// mlpBenchmarks are the implementations compared on the same network; the
// cgo-only test file adds the C reference.
var mlpBenchmarks = []struct {
	name string
	make func(b *testing.B, m MLP) func(x, out []float32)
}{
	{"vek", evaluatorBench(matvecVek)},
	{"blas32", evaluatorBench(matvecBLAS32)},
	{"go4row", evaluatorBench(matvecGo)},
}

func evaluatorBench(mv matvec) func(b *testing.B, m MLP) func(x, out []float32) {
	return func(b *testing.B, m MLP) func(x, out []float32) {
		e, err := NewEvaluator(m)
		if err != nil {
			b.Fatal(err)
		}
		e.mv = mv
		return func(x, out []float32) {
			y, _ := e.Forward(x)
			copy(out, y)
		}
	}
}

func BenchmarkMLP299x256x256x12(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := randomMLP(rng, ActReLU, benchSizes...)
	x := randomVec(rng, benchSizes[0])
	out := make([]float32, 12)
	for _, impl := range mlpBenchmarks {
		b.Run(impl.name, func(b *testing.B) {
			f := impl.make(b, m)
			b.ReportAllocs()
			for b.Loop() {
				f(x, out)
			}
		})
	}
}

// BenchmarkPolicyAct is what the runtime pays per policy step: the latent is
// folded into the first layer, and only the head rows deployment reads are
// evaluated (a single Gaussian's 12 means of 24 rows; a 3-component mixture's
// 36 means and 3 logits of 75).
func BenchmarkPolicyAct(b *testing.B) {
	for _, k := range []int{1, 3} {
		b.Run(fmt.Sprintf("components=%d", k), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			m := randomMLP(rng, ActReLU, 171+128, 256, 256, HeadOutputs(12, k))
			p, err := NewPolicy(m, 171, 128, 12, k)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.SetLatent(randomVec(rng, 128)); err != nil {
				b.Fatal(err)
			}
			obs := randomVec(rng, 171)
			act := make([]float32, 12)
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Act(obs, act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSetLatent(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	p, err := NewPolicy(randomMLP(rng, ActReLU, 171+128, 256, 256, 24), 171, 128, 12, 1)
	if err != nil {
		b.Fatal(err)
	}
	z := randomVec(rng, 128)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.SetLatent(z); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildNavigation171(b *testing.B) {
	c := testContract(b, Navigation171())
	builder, err := c.NewBuilder()
	if err != nil {
		b.Fatal(err)
	}
	in, obs := distinctInputs(), make([]float32, builder.Dim())
	b.ReportAllocs()
	for b.Loop() {
		if err := builder.Build(in, obs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadBank loads a Dual-Force-sized navigation bank: 3 slots of
// 299-256-256-24 and 30 latents of 128.
func BenchmarkReadBank(b *testing.B) {
	raw := encode(b, sampleBank(b, Navigation171(), 3, 10, 128, 256, 256))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// matmulVek is vek's AVX2 matrix product (a row at a time: dst row += x
// value times w row), for comparison with the kernels the encoder uses; in
// chunks of 3 rows, which vek multiplies on the calling goroutine.
func matmulVek(dst, x, w []float32, n, p int) {
	m := len(x) / n
	for r := 0; r < m; r += 3 {
		e := min(r+3, m)
		vek32.MatMul_Into(dst[r*p:e*p], x[r*n:e*n], w, n)
	}
}

// matmulBLAS32 is gonum's float32 GEMM, for comparison with the kernels the
// encoder uses.
func matmulBLAS32(dst, x, w []float32, n, p int) {
	m := len(x) / n
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas32.General{Rows: m, Cols: n, Stride: n, Data: x},
		blas32.General{Rows: n, Cols: p, Stride: p, Data: w}, 0,
		blas32.General{Rows: m, Cols: p, Stride: p, Data: dst})
}

// The robot path of a new reward: one subset of 32 (state, reward) pairs of
// locomotion states through the fre.md-sized encoder.
func BenchmarkFREEncode32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	s := defaultFRESizes(48)
	enc, err := NewEncoder(randomFRENet(rng, s), 32)
	if err != nil {
		b.Fatal(err)
	}
	states, rewards := freSet(rng, 32, s.state)
	plan, _ := BlockPlan(32, 1)
	z := make([]float32, s.latent)
	for _, k := range []struct {
		name string
		mm   matmul
	}{{"default", defaultMatmul}, {"vek", matmulVek}, {"blas32", matmulBLAS32}, {"go", matmulGo}} {
		b.Run(k.name, func(b *testing.B) {
			enc.mm = k.mm
			b.ReportAllocs()
			for b.Loop() {
				if err := enc.EncodeReward(states, rewards, plan, z); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A recall by a new linear reward on the robot: the fre.md-sized encoder over
// a bank's anchors, one encode per subset of 32.
func BenchmarkFREAnchorEncode(b *testing.B) {
	for _, anchors := range []int{32, 128, 1024} {
		b.Run(fmt.Sprintf("%d_anchors", anchors), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 4))
			bank := sampleBank(b, Locomotion48(), 1, 1, 128, 8)
			d := bank.Contract.Layout.Dim()
			bank.FRE = &FRE{Net: *randomFRENet(rng, defaultFRESizes(d)), Subsets: anchors / 32,
				Anchors: Array{Shape: []int{anchors, d}, Data: randomVec(rng, anchors*d)}}
			a, err := bank.NewAnchorEncoder()
			if err != nil {
				b.Fatal(err)
			}
			w, z := randomVec(rng, d), make([]float32, 128)
			b.ReportAllocs()
			for b.Loop() {
				if err := a.EncodeLinearReward(w, z); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
