package dice

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/internal/torchbench"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// locomotionSet is random data of the locomotion shapes (48 observations,
// 12 actions); the update's cost does not depend on the values.
func locomotionSet(n int) (*dataset.Offline, []float32) {
	const obsDim, actDim = 48, 12
	rng := rand.New(rand.NewPCG(8, 192))
	o := &dataset.Offline{
		ObsDim: obsDim, ActDim: actDim,
		Obs: make([]float32, n*obsDim), NextObs: make([]float32, n*obsDim), Act: make([]float32, n*actDim),
		Terminal: make([]bool, n), Timeout: make([]bool, n), EpisodeStart: make([]bool, n),
	}
	for i := range o.Obs {
		o.Obs[i], o.NextObs[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	// Episodes of 50 steps, chained as collected data are: s'_i = s_{i+1}
	// inside an episode.
	for i := range n - 1 {
		if (i+1)%50 != 0 {
			copy(o.NextObs[i*obsDim:(i+1)*obsDim], o.Obs[(i+1)*obsDim:(i+2)*obsDim])
		}
	}
	for i := range o.Act {
		o.Act[i] = float32(2*rng.Float64() - 1)
	}
	reward := make([]float32, n)
	for i := range n {
		o.EpisodeStart[i] = i%50 == 0
		reward[i] = float32(rng.NormFloat64())
	}
	return o, reward
}

const benchSetSize = 65536

// learners are the default value and policy learners on data with reward.
func learners(b *testing.B, data *dataset.Offline, reward []float32) (*Value, *wbc.Learner) {
	rng := rand.New(rand.NewPCG(1, 2))
	v, err := NewValue(data, DefaultValueConfig(), rng)
	if err != nil {
		b.Fatal(err)
	}
	if err := v.SetReward(reward); err != nil {
		b.Fatal(err)
	}
	pi, err := wbc.New(data, wbc.DefaultConfig(), rng)
	if err != nil {
		b.Fatal(err)
	}
	return v, pi
}

// BenchmarkUpdate8192 times one value step plus one policy step at batch
// 8192 for the locomotion networks (V 48-256-256-1, pi 48-256-256-24, ReLU),
// on each BLAS backend, and runs trainer/testdata/update_bench.py, the same
// update in PyTorch (CPU, torch.set_num_threads(2)). Run it with
// GOMAXPROCS=2 to match:
//
//	GOMAXPROCS=2 go test -run XXX -bench Update8192 -benchtime 10x ./trainer/dice
//
// Metrics: ms/update (mean), min-ms/update (fastest single update), the
// same two for PyTorch, and go/torch, the ratio of the fastest updates
// (below 1: Go is faster). On a machine shared with other work the fastest
// update is the steadier comparison.
func BenchmarkUpdate8192(b *testing.B) {
	data, reward := locomotionSet(benchSetSize)
	torchbench.EachBackend(b, func(b *testing.B, be nn.Backend) {
		v, pi := learners(b, data, reward)
		w, err := v.Weights()
		if err != nil {
			b.Fatal(err)
		}
		if err := pi.SetWeights(w); err != nil {
			b.Fatal(err)
		}
		_, _ = v.Step()
		pi.Step()
		meanMs, minMs := torchbench.Measure(b, func() {
			_, _ = v.Step()
			pi.Step()
		})
		torchbench.Compare(b, be.String(), meanMs, minMs, "../testdata/update_bench.py",
			"--n", strconv.Itoa(benchSetSize), "--batch", "8192", "--threads", "2", "--warmup", "2", "--iters", "10")
	})
}

// BenchmarkWeights times the whole-set weight pass (V on s and s' of every
// transition, then the softmax) over benchSetSize locomotion transitions on
// the default backend, the paper's softmax and with the residuals capped at
// their top 1% (ValueConfig.MinESSShare); the paper's locomotion set is 19x
// larger.
func BenchmarkWeights(b *testing.B) {
	data, reward := locomotionSet(benchSetSize)
	for _, share := range []float64{0, 0.01} {
		b.Run(fmt.Sprintf("min-ess-share=%g", share), func(b *testing.B) {
			v, _ := learners(b, data, reward)
			v.cfg.MinESSShare = share
			_, _ = v.Weights()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = v.Weights()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchSetSize, "ns/transition")
		})
	}
}
