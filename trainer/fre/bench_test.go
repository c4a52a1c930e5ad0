package fre

import (
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/trainer/nn"
)

// BenchmarkStep512 times one training step at the reference's batch: 512
// rewards of 32 encode and 8 decode pairs of 48-wide (locomotion) states,
// encoder + decoder forward, backward and Adam.
func BenchmarkStep512(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	a := DefaultArch(48)
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
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
