package dualforce

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// benchSet is random data of the locomotion shapes (48 observations, 12
// actions, 12 diversity features, episodes of 50 steps) of n transitions;
// the cost does not depend on the values.
func benchSet(n int) (*dataset.Offline, Inputs) {
	const obsDim, actDim, phiDim = 48, 12, 12
	rng := rand.New(rand.NewPCG(8, 15))
	o := &dataset.Offline{
		ObsDim: obsDim, ActDim: actDim,
		Obs: make([]float32, n*obsDim), NextObs: make([]float32, n*obsDim), Act: make([]float32, n*actDim),
		Terminal: make([]bool, n), Timeout: make([]bool, n), EpisodeStart: make([]bool, n),
	}
	for i := range o.Obs {
		o.Obs[i] = float32(rng.NormFloat64())
	}
	for i := range n {
		if i+1 < n && (i+1)%50 != 0 {
			copy(o.NextObs[i*obsDim:(i+1)*obsDim], o.Obs[(i+1)*obsDim:(i+2)*obsDim])
		} else {
			for k := range obsDim {
				o.NextObs[i*obsDim+k] = float32(rng.NormFloat64())
			}
		}
		o.EpisodeStart[i] = i%50 == 0
	}
	for i := range o.Act {
		o.Act[i] = float32(2*rng.Float64() - 1)
	}
	in := Inputs{Phi: make([]float32, n*phiDim), PhiDim: phiDim, RE: make([]float32, n)}
	for i := range in.Phi {
		in.Phi[i] = float32(rng.NormFloat64())
	}
	for i := range in.RE {
		in.RE[i] = float32(rng.NormFloat64())
	}
	return o, in
}

// BenchmarkIteration times one outer iteration with the defaults of
// `dualforce train dualforce` (DefaultTrainConfig: n = 3 skills, V and pi
// 256-256 ReLU, batch 1024, five value and five policy steps per skill) on
// a test-size set and on one of the paper-scale locomotion set's size
// (1,244,751 transitions), and splits it: "vdw" is the loop's own work for
// all skills (successor features, nearest skills, rewards, constraint
// estimates), "skill" one skill's learner work per iteration (its value
// steps, the whole-set weight pass, its policy steps, its rehearsal steps). The FRE encoder is a
// stand-in here (the real one adds m subset passes of its transformer per
// skill). Where the defaults refresh V on one block of the set per
// iteration (dice.ValueConfig.RefreshRows: the paper-scale set), the
// exact pass is timed beside them. Run with GOMAXPROCS=2:
//
//	GOMAXPROCS=2 go test -run XXX -bench Iteration -benchtime 3x ./trainer/dualforce
func BenchmarkIteration(b *testing.B) {
	// As `dualforce train dualforce` does: the skills run side by side.
	b.Logf("GOMAXPROCS=%d, one OpenBLAS thread: %v", runtime.GOMAXPROCS(0), nn.OneBLASThreadUnlessSet())
	def, err := DefaultTrainConfig(prep.TaskLocomotion)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{65_536, 1_244_751} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkIteration(b, n, def.Value.RefreshRows) })
		if r := def.Value.RefreshRows; r > 0 && r < n {
			b.Run(fmt.Sprintf("n=%d/exact", n), func(b *testing.B) { benchmarkIteration(b, n, 0) })
		}
	}
}

func benchmarkIteration(b *testing.B, n, refreshRows int) {
	data, in := benchSet(n)
	def, err := DefaultTrainConfig(prep.TaskLocomotion)
	if err != nil {
		b.Fatal(err)
	}
	value, policy, cfg := def.Value, def.Policy, def.Loop
	value.Latent, policy.Latent = 32, 32 // the shipped encoder's latent width
	value.RefreshRows = refreshRows
	cfg.StaleCheckEvery = 0 // timed apart: it is one exact pass per skill
	ts, skills := newToySkills(b, data, def.Skills, value, policy)
	loop, err := New(cfg, in, skills, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	// The first iteration evaluates V on every row whatever RefreshRows:
	// it is not the steady state.
	if _, err := loop.Iterate(); err != nil {
		b.Fatal(err)
	}
	b.Run("iteration", func(b *testing.B) {
		for b.Loop() {
			if _, err := loop.Iterate(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/iteration")
	})
	b.Run("vdw", func(b *testing.B) {
		for b.Loop() {
			psi := make([][]float64, def.Skills)
			for i := range psi {
				psi[i] = toFloat64(dice.SuccessorFeatures(loop.Weights(i), in.Phi, in.PhiDim))
			}
			nb, err := skillset.Nearest(psi)
			if err != nil {
				b.Fatal(err)
			}
			force := Force(psi, nb, cfg.L0)
			for i := range psi {
				Reward(in.Phi, force[i], loop.beta[i])
				Mix(loop.beta[i], in.RE, 0.5, loop.reward[i])
				dice.Constraint(loop.Weights(i), in.RE)
			}
		}
	})
	b.Run("skill", func(b *testing.B) {
		s := ts[0]
		if err := s.policy.SetWeights(loop.Weights(0)); err != nil {
			b.Fatal(err)
		}
		rows := s.policy.Resample(cfg.RehearsalRows)
		var value, weights, policy, rehearsal time.Duration
		for b.Loop() {
			t0 := time.Now()
			for range cfg.ValueSteps {
				if _, err := s.value.Step(); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			w, err := s.value.Weights()
			if err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := s.policy.SetWeights(w); err != nil {
				b.Fatal(err)
			}
			for range cfg.PolicySteps {
				s.policy.Step()
			}
			t3 := time.Now()
			for range cfg.RehearsalSteps {
				if err := s.policy.SetRows(rows); err != nil {
					b.Fatal(err)
				}
				s.policy.Step()
			}
			t4 := time.Now()
			value, weights, policy, rehearsal = value+t1.Sub(t0), weights+t2.Sub(t1), policy+t3.Sub(t2), rehearsal+t4.Sub(t3)
		}
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(per(value), "value-ms")
		b.ReportMetric(per(weights), "weights-ms")
		b.ReportMetric(per(policy), "policy-ms")
		b.ReportMetric(per(rehearsal), "rehearsal-ms")
	})
}
