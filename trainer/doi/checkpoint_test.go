package doi

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// resumeConfig is testConfig with DISDAIN (an ensemble of two classifiers), few iterations
// and a short discriminator.
func resumeConfig() Config {
	cfg := testConfig()
	cfg.DISDAIN, cfg.Ensemble, cfg.DiscSteps = 0.5, 2, 50
	cfg.Policy.Average = 0.9 // the bank deploys the averages: the checkpoint must carry them
	cfg.Run = run.Settings{Iterations: 8, CheckpointEvery: 3}
	return cfg
}

// trainDOI runs Train to its end and returns the bank's bytes.
func trainDOI(t *testing.T, ctx context.Context, d *prep.Data, cfg Config, opt Options) []byte {
	t.Helper()
	l, err := Train(ctx, d, cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Bank()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := skills.EncodeBank(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readCheckpoint(t *testing.T, dir string) *checkpoint.File {
	t.Helper()
	f, err := checkpoint.Read(filepath.Join(dir, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A run stopped after k iterations (cancelled between two checkpoints, or run with fewer
// iterations) and resumed ends with the same bank, byte for byte, and the same checkpoint
// (every parameter, moment, weight, multiplier and generator) as an uninterrupted run.
func TestResumeIsBitIdentical(t *testing.T) {
	d := prepared(t)
	cfg := resumeConfig()
	straightDir := t.TempDir()
	straight := trainDOI(t, context.Background(), d, cfg, Options{Options: run.Options{Dir: straightDir, Quiet: true}})
	want := readCheckpoint(t, straightDir)

	t.Run("cancelled", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := func(r map[string]metrics.Num) {
			if r[metrics.IterationKey] == 5 {
				cancel()
			}
		}
		l, err := Train(ctx, d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}, Observe: stop})
		if !errors.Is(err, context.Canceled) || l == nil || l.iteration != 5 {
			t.Fatalf("cancelled run: %v", err)
		}
		if got := readCheckpoint(t, dir).Iteration; got != 5 {
			t.Fatalf("the cancelled run saved iteration %d, want 5", got)
		}
		got := trainDOI(t, context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}})
		compareRuns(t, straight, got, want, readCheckpoint(t, dir))
	})
	t.Run("fewer iterations", func(t *testing.T) {
		dir := t.TempDir()
		short := cfg
		short.Run.Iterations = 4
		trainDOI(t, context.Background(), d, short, Options{Options: run.Options{Dir: dir, Quiet: true}})
		got := trainDOI(t, context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}})
		compareRuns(t, straight, got, want, readCheckpoint(t, dir))
		s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), "q_entropy")
		if err != nil || len(s.Iteration) != cfg.Run.Iterations {
			t.Fatalf("metrics log of the resumed run: %v, %d lines", err, len(s.Iteration))
		}
	})
	t.Run("nothing left to do", func(t *testing.T) {
		// Resuming a finished run exports the same bank from the checkpoint alone.
		got := trainDOI(t, context.Background(), d, cfg, Options{Options: run.Options{Dir: straightDir, Resume: true, Quiet: true}})
		if !bytes.Equal(straight, got) {
			t.Fatal("the bank of a finished run resumed differs")
		}
	})
}

func compareRuns(t *testing.T, wantBank, gotBank []byte, want, got *checkpoint.File) {
	t.Helper()
	if !bytes.Equal(wantBank, gotBank) {
		t.Error("the resumed run's bank differs from the uninterrupted run's")
	}
	if got.Iteration != want.Iteration || !reflect.DeepEqual(got.Float32, want.Float32) || !reflect.DeepEqual(got.Float64, want.Float64) ||
		!bytes.Equal(got.State, want.State) {
		for name, x := range want.Float32 {
			if !reflect.DeepEqual(x, got.Float32[name]) {
				t.Errorf("array %s differs", name)
			}
		}
		for name, x := range want.Float64 {
			if !reflect.DeepEqual(x, got.Float64[name]) {
				t.Errorf("array %s differs", name)
			}
		}
		t.Errorf("the resumed run's final checkpoint differs (state %s, want %s)", got.State, want.State)
	}
}

// A checkpoint of another configuration or other data is refused with the reason, and so is a
// damaged one: an array missing or of another size, multipliers out of bounds, weights that
// are not a distribution, a non-finite classifier, an unreadable generator.
func TestResumeRefusesOtherRuns(t *testing.T) {
	d := prepared(t)
	cfg := resumeConfig()
	cfg.Run.Iterations = 2
	dir := t.TempDir()
	trainDOI(t, context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}})
	good := readCheckpoint(t, dir)
	resume := func(d *prep.Data, cfg Config, f *checkpoint.File) error {
		dir := t.TempDir()
		if err := checkpoint.Write(filepath.Join(dir, run.CheckpointFile), f); err != nil {
			t.Fatal(err)
		}
		_, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}})
		return err
	}
	other := cfg
	other.Seed++
	if err := resume(d, other, good); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("another seed: %v", err)
	}
	fewer := cfg
	fewer.Skills = 2
	if err := resume(d, fewer, good); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("another number of skills: %v", err)
	}
	if err := resume(preptest.Synthetic(t, datafiletest.Small, 2, true), cfg, good); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("other data: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(f *checkpoint.File)
		want error
	}{
		{"no value network", func(f *checkpoint.File) { delete(f.Float32, skillset.LearnerArray(1, "value")) }, skillset.ErrLearners},
		{"short policy", func(f *checkpoint.File) {
			k := skillset.LearnerArray(0, "policy")
			f.Float32[k] = f.Float32[k][1:]
		}, checkpoint.ErrCheckpoint},
		{"short reward", func(f *checkpoint.File) { f.Float32[ArrayReward] = f.Float32[ArrayReward][1:] }, checkpoint.ErrArray},
		{"mu out of bounds", func(f *checkpoint.File) { f.Float64[ArrayMu] = []float64{0, 100, 0} }, checkpoint.ErrCheckpoint},
		{"NaN mu", func(f *checkpoint.File) { f.Float64[ArrayMu] = []float64{0, math.NaN(), 0} }, checkpoint.ErrCheckpoint},
		{"weights not a distribution", func(f *checkpoint.File) { f.Float64[weightsArray(2)][0] += 1 }, checkpoint.ErrCheckpoint},
		{"no weights", func(f *checkpoint.File) { delete(f.Float64, weightsArray(0)) }, checkpoint.ErrCheckpoint},
		{"NaN classifier", func(f *checkpoint.File) { f.Float32[classifierArray(1, "params")][3] = float32(math.NaN()) }, checkpoint.ErrCheckpoint},
		{"short classifier moments", func(f *checkpoint.File) {
			k := classifierArray(0, "adam_v")
			f.Float32[k] = f.Float32[k][1:]
		}, nn.ErrShape},
		{"bad generator", func(f *checkpoint.File) {
			f.State = []byte(`{"rng":["","",""],"value_adam_steps":[[1,0],[1,0],[1,0]],"policy_adam_steps":[[1,0],[1,0],[1,0]]}`)
		}, skillset.ErrLearners},
		{"state for no skills", func(f *checkpoint.File) { f.State = []byte(`{"rng":[],"value_adam_steps":[],"policy_adam_steps":[]}`) }, skillset.ErrLearners},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := readCheckpoint(t, dir)
			tc.edit(f)
			err := resume(d, cfg, f)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}
