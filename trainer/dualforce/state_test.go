package dualforce

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// toyRun is the toy's loop with handles on every part that holds state.
type toyRun struct {
	loop   *Loop
	skills []toySkill
}

// newToyRun builds the toy's loop with rehearsal on, keeping few
// snapshots so that their stride grows within a short run.
func newToyRun(t *testing.T, tb *toy) *toyRun {
	t.Helper()
	ts, skills := toySkills(t, tb, 3)
	cfg := toyConfig()
	cfg.RehearsalSteps, cfg.RehearsalRows, cfg.RehearsalKeep = 1, 256, 4
	l, err := New(cfg, tb.in, skills, rand.New(rand.NewPCG(15, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return &toyRun{loop: l, skills: ts}
}

func (r *toyRun) iterate(t *testing.T, n int) {
	t.Helper()
	for range n {
		if _, err := r.loop.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
}

// skillState is what a skill's learners change while training.
type skillState struct {
	rng    []byte
	value  dice.ValueState
	policy wbc.State
}

// TestResumeIsBitIdentical: a loop rebuilt from scratch and given the saved
// state of the loop, its learners and its encoders continues exactly as the
// loop that saved them.
func TestResumeIsBitIdentical(t *testing.T) {
	const before, after = 12, 8
	tb := newToy(rand.New(rand.NewPCG(15, 1)), 4000)
	whole := newToyRun(t, tb)
	whole.iterate(t, before)
	saved := whole.loop.State()
	var learners []skillState
	for _, sk := range whole.skills {
		rng, err := sk.src.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		learners = append(learners, skillState{rng: rng, value: sk.value.State(), policy: sk.policy.State()})
	}
	whole.iterate(t, after)

	resumed := newToyRun(t, tb)
	if err := resumed.loop.Restore(saved); err != nil {
		t.Fatal(err)
	}
	for i, sk := range resumed.skills {
		if err := sk.value.Restore(learners[i].value); err != nil {
			t.Fatal(err)
		}
		if err := sk.policy.Restore(learners[i].policy); err != nil {
			t.Fatal(err)
		}
		if err := sk.src.UnmarshalBinary(learners[i].rng); err != nil {
			t.Fatal(err)
		}
	}
	resumed.iterate(t, after)
	got, want := resumed.loop.State(), whole.loop.State()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed run differs from the uninterrupted one (iteration %d vs %d, mu %v vs %v)",
			got.Iteration, want.Iteration, got.Mu, want.Mu)
	}
	t.Logf("%d iterations, resumed after %d: %d latents, %d rehearsal snapshots, mu %v, bit-identical", before+after, before, len(got.Latents), len(got.Snapshots), got.Mu)
}

// rehearsingScriptedLoop is a scripted loop of two skills after three
// iterations, rehearsing with two snapshots kept (stride 2: one each).
func rehearsingScriptedLoop(t *testing.T) *Loop {
	t.Helper()
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	cfg := DefaultConfig()
	cfg.RehearsalSteps, cfg.RehearsalRows, cfg.RehearsalKeep = 1, 4, 2
	l, _, _ := scriptedLoop(t, cfg, [][]float64{{1, 0, 0}, {0, 1, 0}}, in)
	for range 3 {
		if _, err := l.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func TestRestoreRefusesStatesThatDoNotFit(t *testing.T) {
	l := rehearsingScriptedLoop(t)
	good := l.State()
	tests := []struct {
		name  string
		spoil func(*State)
	}{
		{"negative iteration", func(s *State) { s.Iteration = -1 }},
		{"multiplier missing", func(s *State) { s.Mu = s.Mu[:1] }},
		{"multiplier out of bounds", func(s *State) { s.Mu[0] = 3.5 }},
		{"multiplier NaN", func(s *State) { s.Mu[1] = math.NaN() }},
		{"weights of another length", func(s *State) { s.Weights[0] = s.Weights[0][:2] }},
		{"negative weight", func(s *State) { s.Weights[1] = []float64{1.5, -0.5, 0} }},
		{"weights not summing to one", func(s *State) { s.Weights[1] = []float64{0.5, 0, 0} }},
		{"latent missing", func(s *State) { s.Latents = s.Latents[:1] }},
		{"latents out of order", func(s *State) { s.Latents[0], s.Latents[1] = s.Latents[1], s.Latents[0] }},
		{"latent sigma above one", func(s *State) { s.Latents[0].Sigma = 1.5 }},
		{"latent psi of another width", func(s *State) { s.Latents[1].Psi = nil }},
		{"latent z NaN", func(s *State) { s.Latents[1].Z[0] = float32(math.NaN()) }},
		{"rehearsal snapshot missing", func(s *State) { s.Snapshots = s.Snapshots[1:] }},
		{"rehearsal snapshot of another iteration", func(s *State) { s.Snapshots[0].Iteration = 1 }},
		{"rehearsal snapshots of skills swapped", func(s *State) { s.Snapshots[0].Skill, s.Snapshots[1].Skill = 1, 0 }},
		{"rehearsal snapshot of another size", func(s *State) { s.Snapshots[1].Rows = s.Snapshots[1].Rows[:3] }},
		{"rehearsal row outside the set", func(s *State) { s.Snapshots[1].Rows[2] = 3 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := l.State()
			tc.spoil(&s)
			if err := l.Restore(s); !errors.Is(err, ErrState) {
				t.Fatalf("err %v, want ErrState", err)
			}
			if !reflect.DeepEqual(l.State(), good) {
				t.Fatal("a refused state changed the loop")
			}
		})
	}
}

// TestSkillsSideBySideAreDeterministic: the skills' goroutines share
// nothing they write, so a run on one thread and one on four end alike.
func TestSkillsSideBySideAreDeterministic(t *testing.T) {
	tb := newToy(rand.New(rand.NewPCG(15, 1)), 4000)
	var states []State
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		r := newToyRun(t, tb)
		r.iterate(t, 10)
		runtime.GOMAXPROCS(prev)
		states = append(states, r.loop.State())
	}
	if !reflect.DeepEqual(states[0], states[1]) {
		t.Fatalf("runs on 1 and 4 threads differ: mu %v vs %v", states[0].Mu, states[1].Mu)
	}
}

func TestStateArraysRoundTrip(t *testing.T) {
	l := rehearsingScriptedLoop(t)
	s := l.State()
	f32, f64 := s.Arrays()
	back, err := StateFromArrays(f32, f64, 3, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Snapshots) != 2*1 {
		t.Fatalf("%d rehearsal snapshots after 3 iterations keeping 2 (stride 2), want one per skill", len(s.Snapshots))
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip changed the state:\n got %+v\nwant %+v", back, s)
	}
	if err := l.Restore(back); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(f32 map[string][]float32, f64 map[string][]float64)
	}{
		{"multipliers missing", func(_ map[string][]float32, f64 map[string][]float64) { delete(f64, ArrayMu) }},
		{"weights of a skill missing", func(_ map[string][]float32, f64 map[string][]float64) { delete(f64, ArrayWeights+"1") }},
		{"a latent short", func(_ map[string][]float32, f64 map[string][]float64) { f64[ArraySigma] = f64[ArraySigma][1:] }},
		{"z of another width", func(f32 map[string][]float32, _ map[string][]float64) { f32[ArrayZ] = f32[ArrayZ][:5] }},
		{"a rehearsal snapshot's skill missing", func(_ map[string][]float32, f64 map[string][]float64) {
			f64[ArraySnapshotSkill] = f64[ArraySnapshotSkill][1:]
		}},
		{"rehearsal rows missing", func(_ map[string][]float32, f64 map[string][]float64) { delete(f64, ArraySnapshotRows) }},
		{"rehearsal rows not a whole number per snapshot", func(_ map[string][]float32, f64 map[string][]float64) {
			f64[ArraySnapshotRows] = f64[ArraySnapshotRows][1:]
		}},
	} {
		f32, f64 := s.Arrays()
		tc.spoil(f32, f64)
		if _, err := StateFromArrays(f32, f64, 3, 2, 2, 1); !errors.Is(err, ErrState) {
			t.Errorf("%s: err %v, want ErrState", tc.name, err)
		}
	}
	// A row that is not a whole number reads as one no check accepts.
	f32, f64 = s.Arrays()
	f64[ArraySnapshotRows][0] = 0.5
	if got, err := StateFromArrays(f32, f64, 3, 2, 2, 1); err != nil {
		t.Fatal(err)
	} else if err := l.Restore(got); !errors.Is(err, ErrState) {
		t.Errorf("rehearsal row 0.5: err %v, want ErrState", err)
	}
}
