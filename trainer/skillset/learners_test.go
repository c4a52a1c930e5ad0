package skillset

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// newLearners builds n skills' learners on d, each with its own generator of seed, their
// weight passes refreshing refreshRows rows each (0: exact), their policies averaged with decay
// average (0: none).
func newLearners(t *testing.T, d *prep.Data, n int, seed uint64, refreshRows int, average float64) []Learners {
	t.Helper()
	vc, pc := dice.DefaultValueConfig(), wbc.DefaultConfig()
	vc.Hidden, pc.Hidden = []int{16}, []int{16}
	vc.RefreshRows, pc.Average = refreshRows, average
	vc.Batch, vc.InitBatch, pc.Batch = 64, 64, 64
	var ls []Learners
	for i := range n {
		src := rand.NewPCG(seed, uint64(i))
		rng := rand.New(src)
		v, err := dice.NewValue(d.Offline, vc, rng)
		if err != nil {
			t.Fatal(err)
		}
		pi, err := wbc.New(d.Offline, pc, rng)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, Learners{Value: v, Policy: pi, Source: src})
	}
	return ls
}

// Saved after some steps and restored into learners of another seed: the same parameters,
// moments, step counts, generator and, for weight passes that refresh one block at a time, the
// kept values and, for averaged policies, the average (which DeployedPolicy then names); a
// state for other skills or with an array missing is refused.
func TestSaveRestoreLearners(t *testing.T) {
	d := preptest.Synthetic(t, datafiletest.Small, 1, true)
	for _, tc := range []struct {
		refresh int
		average float64
	}{{0, 0}, {d.Offline.Len() / 2, 0}, {0, 0.99}} {
		t.Run(fmt.Sprintf("refresh %d rows, average %g", tc.refresh, tc.average), func(t *testing.T) {
			checkSaveRestoreLearners(t, d, tc.refresh, tc.average)
		})
	}
}

func checkSaveRestoreLearners(t *testing.T, d *prep.Data, refresh int, average float64) {
	ls := newLearners(t, d, 2, 1, refresh, average)
	reward := make([]float32, d.Offline.Len())
	for _, l := range ls {
		if err := l.Value.SetReward(reward); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Value.Step(); err != nil {
			t.Fatal(err)
		}
		w, err := l.Value.Weights()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Policy.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		l.Policy.Step()
	}
	f32 := map[string][]float32{}
	saved, err := SaveLearners(ls, f32)
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := f32[LearnerArray(0, valueCache)]; kept != (refresh > 0) {
		t.Fatalf("kept values saved: %v, with passes refreshing %d rows", kept, refresh)
	}
	averaged := LearnerArray(1, policyAverage)
	if _, kept := f32[averaged]; kept != (average > 0) {
		t.Fatalf("policy average saved: %v, with decay %v", kept, average)
	}
	if _, ok := f32[DeployedPolicy(1, average > 0)]; !ok {
		t.Fatalf("no deployed policy array %s", DeployedPolicy(1, average > 0))
	}
	back := newLearners(t, d, 2, 2, refresh, average)
	if err := RestoreLearners(back, saved, f32); err != nil {
		t.Fatal(err)
	}
	for i := range ls {
		if !reflect.DeepEqual(ls[i].Value.State(), back[i].Value.State()) || !reflect.DeepEqual(ls[i].Policy.State(), back[i].Policy.State()) ||
			ls[i].Source.Uint64() != back[i].Source.Uint64() {
			t.Fatalf("skill %d restored differently", i)
		}
	}
	if err := RestoreLearners(back[:1], saved, f32); !errors.Is(err, ErrLearners) {
		t.Errorf("state of two skills into one: %v", err)
	}
	if refresh > 0 {
		cache := f32[LearnerArray(1, valueCache)]
		delete(f32, LearnerArray(1, valueCache))
		if err := RestoreLearners(back, saved, f32); !errors.Is(err, dice.ErrState) {
			t.Errorf("kept values missing: %v", err)
		}
		f32[LearnerArray(1, valueCache)] = cache
	}
	if average > 0 {
		kept := f32[averaged]
		delete(f32, averaged)
		if err := RestoreLearners(back, saved, f32); !errors.Is(err, wbc.ErrState) {
			t.Errorf("policy average missing: %v", err)
		}
		f32[averaged] = kept
	}
	delete(f32, LearnerArray(1, "policy_adam_v"))
	if err := RestoreLearners(back, saved, f32); !errors.Is(err, ErrLearners) {
		t.Errorf("an array missing: %v", err)
	}
	f32[LearnerArray(1, "policy_adam_v")] = []float32{1}
	if err := RestoreLearners(back, saved, f32); !errors.Is(err, nn.ErrShape) {
		t.Errorf("an array of another length: %v", err)
	}
}
