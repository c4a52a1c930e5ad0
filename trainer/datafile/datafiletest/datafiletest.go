// Package datafiletest makes small synthetic datasets in the locomotion48
// layout for tests of the trainer and its command line: valid
// datafile archives whose expert is easy to tell apart, so training on them
// takes seconds and has a known right answer.
package datafiletest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// Mode names of the synthetic mix. ExpertMode is the only expert one.
const (
	ExpertMode = "synthetic-trot"
	RandomMode = "random"
	DriftMode  = "drift"
)

// EpisodeSteps is the length of every synthetic episode.
const EpisodeSteps = 50

// Target is the joint pose (joint_pos field) the expert drives to and holds.
func Target(j int) float64 { return 0.6 * math.Sin(float64(j)+0.5) }

// Sizes sets how many episodes of each mode a dataset holds.
type Sizes struct {
	Expert, Random, Drift int
	// ExpertSet is the number of episodes in the separate expert archive.
	ExpertSet int
}

// Small is about 2000 transitions and 500 expert states.
var Small = Sizes{Expert: 8, Random: 24, Drift: 8, ExpertSet: 10}

// ExpertAction is what the expert does in joint pose q (12 values).
func ExpertAction(q []float64, j int) float64 { return clamp(3*(Target(j)-q[j]), -1, 1) }

func clamp(x, lo, hi float64) float64 { return min(max(x, lo), hi) }

// Datasets builds the offline and expert archives of the synthetic task:
// the joint pose q moves by 0.05 a per step plus noise; the expert drives q
// to Target and holds it, the random mode acts uniformly, the drift mode
// pushes every joint one way and falls (a terminal) at the pose limit,
// where the others' joints stop.
// Observations follow skills.Locomotion48 with the fields a real robot
// would give (the base fields are noise about their standing values).
func Datasets(t testing.TB, sz Sizes, seed uint64) (*datafile.Offline, *datafile.Expert) {
	t.Helper()
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5e7))
	off := &datafile.Offline{
		Manifest: datafile.Manifest{
			FormatVersion: datafile.FormatVersion, Kind: datafile.KindOffline, Task: "locomotion",
			Contract: c, Seed: seed, Reward: "synthetic: -mean |q - target|",
			Modes: []datafile.Mode{{Name: ExpertMode, Expert: true}, {Name: RandomMode}, {Name: DriftMode}},
		},
		Data: dataset.Offline{ObsDim: c.Layout.Dim(), ActDim: skills.NumJoints},
	}
	counts := []int{sz.Expert, sz.Random, sz.Drift}
	for mode, n := range counts {
		for range n {
			episode(rng, &c.Layout, int32(mode), off)
		}
	}
	off.Manifest.Transitions = off.Data.Len()
	off.Manifest.ExpertTransitions = off.Manifest.Modes[0].Transitions

	exp := &datafile.Expert{Manifest: off.Manifest, Data: dataset.Expert{ObsDim: c.Layout.Dim()}}
	scratch := &datafile.Offline{Manifest: datafile.Manifest{Modes: make([]datafile.Mode, 1)}, Data: dataset.Offline{ObsDim: c.Layout.Dim(), ActDim: skills.NumJoints}}
	for range sz.ExpertSet {
		episode(rng, &c.Layout, 0, scratch)
	}
	exp.Data.Obs = scratch.Data.Obs
	exp.Manifest.Kind, exp.Manifest.Modes = datafile.KindExpert, nil
	exp.Manifest.Transitions, exp.Manifest.ExpertTransitions = exp.Data.Len(), exp.Data.Len()
	exp.Manifest.Reward = ""
	if err := off.Validate(); err != nil {
		t.Fatalf("synthetic offline set: %v", err)
	}
	if err := exp.Validate(); err != nil {
		t.Fatalf("synthetic expert set: %v", err)
	}
	return off, exp
}

// episode appends one episode of mode to o.
func episode(rng *rand.Rand, l *skills.Layout, mode int32, o *datafile.Offline) {
	const j = skills.NumJoints
	q, a, prev := make([]float64, j), make([]float64, j), make([]float64, j)
	for i := range q {
		q[i] = 3*rng.Float64() - 1.5
	}
	drift := 1.0
	if rng.IntN(2) == 0 {
		drift = -1
	}
	md := &o.Manifest.Modes[mode]
	md.Episodes++
	obs := observe(rng, l, q, q, prev)
	for step := range EpisodeSteps {
		for i := range a {
			switch mode {
			case 0:
				a[i] = clamp(ExpertAction(q, i)+0.05*rng.NormFloat64(), -1, 1)
			case 1:
				a[i] = 2*rng.Float64() - 1
			default:
				a[i] = clamp(0.5*drift+0.2*rng.NormFloat64(), -1, 1)
			}
		}
		next := make([]float64, j)
		fell := false
		for i := range next {
			next[i] = q[i] + 0.05*a[i] + 0.01*rng.NormFloat64()
			if math.Abs(next[i]) > 2 {
				fell = fell || mode == 2
				next[i] = clamp(next[i], -2, 2)
			}
		}
		nextObs := observe(rng, l, next, q, a)
		cost := 0.0
		for i := range q {
			cost += math.Abs(q[i] - Target(i))
		}
		d := &o.Data
		d.Obs = append(d.Obs, obs...)
		d.NextObs = append(d.NextObs, nextObs...)
		for _, v := range a {
			d.Act = append(d.Act, float32(v))
		}
		last := step == EpisodeSteps-1 || fell
		d.Terminal = append(d.Terminal, fell)
		d.Timeout = append(d.Timeout, last && !fell)
		d.EpisodeStart = append(d.EpisodeStart, step == 0)
		w := &o.Withheld
		w.Reward = append(w.Reward, float32(-cost/j))
		w.IsExpert = append(w.IsExpert, mode == 0)
		w.Mode = append(w.Mode, mode)
		w.BasePosition = append(w.BasePosition, 0.03*float32(step), 0, 0.24)
		w.BaseRPY = append(w.BaseRPY, 0, 0, 0)
		md.Transitions++
		if fell {
			md.Falls++
			return
		}
		q, obs = next, nextObs
		copy(prev, a)
	}
}

// observe builds a raw locomotion48 observation of joint pose q reached
// from prevQ with the previous action prev.
func observe(rng *rand.Rand, l *skills.Layout, q, prevQ, prev []float64) []float32 {
	obs := make([]float32, l.Dim())
	put := func(name string, v func(i int) float64) {
		f, _ := l.Field(name)
		for i := range f.Dim {
			obs[f.Offset+i] = float32(v(i))
		}
	}
	noise := func(s float64) func(int) float64 { return func(int) float64 { return s * rng.NormFloat64() } }
	put(skills.FieldBaseLinVel, noise(0.05))
	put(skills.FieldBaseAngVel, noise(0.1))
	put(skills.FieldProjectedGravity, func(i int) float64 {
		if i == 2 {
			return -1
		}
		return 0.02 * rng.NormFloat64()
	})
	put(skills.FieldCommand, func(i int) float64 { return []float64{0.3, 0, 0}[i] })
	put(skills.FieldJointPos, func(i int) float64 { return q[i] })
	put(skills.FieldJointVel, func(i int) float64 { return (q[i] - prevQ[i]) * 50 })
	put(skills.FieldPreviousAction, func(i int) float64 { return prev[i] })
	return obs
}
