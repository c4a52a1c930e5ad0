package fre

import (
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/torchbench"
	"github.com/dualforce/dualforce/trainer/nn"
)

// BenchmarkStep512 times one training step at the reference's batch and
// sizes: 512 rewards of 32 encode and 8 decode pairs of 48-wide
// (locomotion) states, encoder + decoder forward, backward and Adam, on
// each BLAS backend, and runs trainer/testdata/fre_bench.py, the same step
// in PyTorch (CPU, 2 threads). Run it with GOMAXPROCS=2 to match:
//
//	GOMAXPROCS=2 go test -run XXX -bench Step512 -benchtime 5x ./trainer/fre
//
// Metrics: ms/update (mean), min-ms/update (fastest step), the same two for
// PyTorch, and go/torch, the ratio of the fastest steps (below 1: Go is
// faster).
func BenchmarkStep512(b *testing.B) {
	torchbench.EachBackend(b, func(b *testing.B, be nn.Backend) {
		rng := rand.New(rand.NewPCG(4, 4))
		a := ReferenceArch(48)
		m, err := NewModel[float32](a, 1)
		if err != nil {
			b.Fatal(err)
		}
		batch := randBatch[float32](rng, a, 512, 32, 8, true)
		opt := nn.NewAdam[float32](len(m.Arena.Params()), 1e-4)
		step := func() {
			m.Arena.ZeroGrad()
			m.Step(batch, 0.01)
			opt.Step(m.Arena.Params(), m.Arena.Grads())
		}
		step()
		meanMs, minMs := torchbench.Measure(b, step)
		torchbench.Compare(b, be.String(), meanMs, minMs, "../testdata/fre_bench.py", "--threads", "2", "--warmup", "2", "--iters", "5")
	})
}
