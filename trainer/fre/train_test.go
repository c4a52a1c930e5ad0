package fre

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/run"
)

// testConfig is a model and schedule small enough for the test suite.
func testConfig() Config {
	c := DefaultConfig()
	c.Arch = Arch{StateWidth: 16, RewardWidth: 16, Bins: 32, Blocks: 2, Heads: 2, FFN: 64, Latent: 16, DecoderHidden: []int{64, 64, 64}}
	c.Batch, c.LR, c.Anchors, c.Run.Iterations = 32, 1e-3, 64, 800
	c.Prior.Linear, c.Prior.MLP = 10, 4
	return c
}

// TestPretrainingReconstructsHeldOutStates is the test-scale pre-training
// (about 30 s on two loaded cores): a small model on synthetic states must
// reconstruct rewards on held-out states clearly better than their mean
// does (R^2 above 0.25 for every family of the prior) and tell unseen
// rewards apart at least four times as often as chance.
func TestPretrainingReconstructsHeldOutStates(t *testing.T) {
	src := syntheticSource(3000, 1)
	cfg := testConfig()
	tr := mustTrainer(t, src, cfg)
	ev := DefaultEvalConfig()
	ev.DualForm, ev.NewLinear, ev.NewMLP, ev.Identify, ev.Stability = 64, 10, 4, 64, 32
	start := time.Now()
	for range cfg.Run.Iterations {
		tr.Step()
	}
	t.Logf("%d steps in %v", cfg.Run.Iterations, time.Since(start))
	rep := tr.Evaluate(ev)
	for _, s := range append(rep.Seen, rep.Unseen...) {
		t.Logf("%-10s %3d rewards, codes of %d states: MSE %.4f R^2 %.3f", s.Family, s.Rewards, s.States, s.MSE, s.R2)
	}
	for _, id := range rep.Identification {
		t.Logf("identification, codes of %d states: %.3f of %d (chance %.3f), by family %+v", id.States, id.Fraction, id.Rewards, 1/float64(id.Rewards), id.ByFamily)
	}
	// Every family twice: from one subset of Tokens states, and from the
	// mean over the Anchors/Tokens subsets.
	if len(rep.Seen) != 8 || len(rep.Unseen) != 4 {
		t.Fatalf("%d seen and %d unseen scores, want 8 and 4 (four and two families, each for 1 and %d subsets)", len(rep.Seen), len(rep.Unseen), cfg.Anchors/cfg.Tokens)
	}
	for i, s := range rep.Seen {
		if want := []int{1, cfg.Anchors / cfg.Tokens}[i/4]; s.Subsets != want || s.States != want*cfg.Tokens {
			t.Errorf("seen score %d (%s) from %d subsets of %d states, want %d subsets", i, s.Family, s.Subsets, s.States, want)
		}
		if s.R2 < 0.25 {
			t.Errorf("%s from %d subsets: held-out R^2 %.3f, want at least 0.25", s.Family, s.Subsets, s.R2)
		}
	}
	// One subset of Tokens states, and the mean over the Anchors/Tokens
	// subsets Dual-Force and the robot encode with.
	if ms := len(rep.Identification); ms != 2 || rep.Identification[1].Subsets != cfg.Anchors/cfg.Tokens {
		t.Fatalf("identification measured %d times (%+v), want for 1 and %d subsets", ms, rep.Identification, cfg.Anchors/cfg.Tokens)
	}
	for _, id := range rep.Identification {
		if chance := 1 / float64(id.Rewards); id.Fraction < 4*chance {
			t.Errorf("identification over %d subsets %.3f, want at least 4 times chance (%.3f)", id.Subsets, id.Fraction, chance)
		}
	}
	// A multiplier step moves a code less than a change of skill does.
	st := rep.Stability
	if st == nil {
		t.Fatal("no stability measurement")
	}
	t.Logf("stability: %+v", *st)
	if st.Rewards != 32 || st.Subsets != cfg.Anchors/cfg.Tokens || !(st.OtherStates > 0) || !(st.SmallChange < st.OtherSkill) {
		t.Errorf("stability %+v: want 32 rewards from %d subsets, codes that move more for another skill than for a small change", *st, cfg.Anchors/cfg.Tokens)
	}
}

// The small change of the stability measurement is made on the same states:
// with no change at all, the distance is exactly 0, and on other states it is
// not.
func TestStabilityComparesOnTheSameStates(t *testing.T) {
	tr := mustTrainer(t, syntheticSource(600, 1), tinyRunConfig())
	tr.Step()
	rng := rand.New(rand.NewPCG(1, 2))
	st := tr.stability(4, tr.cfg.Anchors/tr.cfg.Tokens, rng, 0)
	if st.SmallChange != 0 || !(st.OtherStates > 0) || !(st.OtherSkill > 0) {
		t.Fatalf("with c unchanged: %+v, want a small-change distance of exactly 0 and positive others", *st)
	}
}

func tinyRunConfig() Config {
	c := DefaultConfig()
	c.Arch = tinyArch()
	c.Arch.Bins = 8
	c.Batch, c.Tokens, c.Decode, c.Anchors = 4, 6, 3, 12
	c.Run = run.Settings{Iterations: 7, CheckpointEvery: 2}
	// The learning rate decays from before the interruption of TestResumeIsBitIdentical on.
	c.LRDecayFrom, c.LRHalfLife = 2, 3
	c.Prior.Linear, c.Prior.MLP = 3, 2
	return c
}

func TestLearningRateSchedule(t *testing.T) {
	c := DefaultConfig()
	c.LR, c.LRDecayFrom, c.LRHalfLife = 1e-3, 10, 5
	for _, tc := range []struct {
		steps int
		want  float64
	}{{0, 1e-3}, {10, 1e-3}, {15, 5e-4}, {20, 2.5e-4}, {30, 6.25e-5}} {
		if got := c.LRAt(tc.steps); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("after %d steps: learning rate %g, want %g", tc.steps, got, tc.want)
		}
	}
	c.LRHalfLife = 0
	if got := c.LRAt(1000); got != 1e-3 {
		t.Errorf("no half-life: learning rate %g after 1000 steps, want the constant 1e-3", got)
	}
	for _, bad := range [][2]int{{-1, 5}, {10, -1}} {
		c.LRDecayFrom, c.LRHalfLife = bad[0], bad[1]
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("decay from %d, half-life %d: %v, want ErrConfig", bad[0], bad[1], err)
		}
	}
}

// An interrupted run resumed from its checkpoint ends with the same
// parameters, bit for bit, as an uninterrupted one.
func TestResumeIsBitIdentical(t *testing.T) {
	src := syntheticSource(600, 2)
	cfg := tinyRunConfig()
	ev := EvalConfig{Decode: 4, DualForm: 4, Identify: 4, Seed: 1}
	whole := t.TempDir()
	if _, _, err := Train(context.Background(), src, cfg, Options{Options: run.Options{Dir: whole}, Eval: ev}); err != nil {
		t.Fatal(err)
	}
	parts := t.TempDir()
	short := cfg
	short.Run.Iterations = 3
	if _, _, err := Train(context.Background(), src, short, Options{Options: run.Options{Dir: parts}, Eval: ev}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Train(context.Background(), src, cfg, Options{Options: run.Options{Dir: parts}, Eval: ev}); !errors.Is(err, run.ErrRunExists) {
		t.Fatalf("second run without --resume: %v, want ErrRunExists", err)
	}
	other := cfg
	other.LR *= 2
	if _, _, err := Train(context.Background(), src, other, Options{Options: run.Options{Dir: parts, Resume: true}, Eval: ev}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Fatalf("resume with another learning rate: %v, want ErrResumeMismatch", err)
	}
	if _, _, err := Train(context.Background(), syntheticSource(600, 3), cfg, Options{Options: run.Options{Dir: parts, Resume: true}, Eval: ev}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Fatalf("resume on other states: %v, want ErrResumeMismatch", err)
	}
	if _, _, err := Train(context.Background(), src, cfg, Options{Options: run.Options{Dir: parts, Resume: true}, Eval: ev}); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(whole, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(parts, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("resumed run's checkpoint differs from the uninterrupted run's")
	}
	ma, _ := os.ReadFile(filepath.Join(whole, run.MetricsFile))
	mb, _ := os.ReadFile(filepath.Join(parts, run.MetricsFile))
	if bytes.Count(ma, []byte("\n")) != cfg.Run.Iterations || bytes.Count(mb, []byte("\n")) != cfg.Run.Iterations {
		t.Fatalf("metrics logs of %d and %d lines, want %d", bytes.Count(ma, []byte("\n")), bytes.Count(mb, []byte("\n")), cfg.Run.Iterations)
	}
	lrs, err := metrics.ReadSeries(filepath.Join(parts, run.MetricsFile), "lr")
	if err != nil {
		t.Fatal(err)
	}
	for i, lr := range lrs.Values["lr"] {
		if want := cfg.LRAt(i); math.Abs(lr-want) > 1e-9*want {
			t.Errorf("step %d logged learning rate %g, want %g", i+1, lr, want)
		}
	}
	for _, f := range []string{LossesPlot, EvalFile} {
		if _, err := os.Stat(filepath.Join(parts, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}

	// Load rebuilds the trained encoder from the checkpoint, on its source only.
	loaded, err := Load(src, filepath.Join(parts, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Steps() != cfg.Run.Iterations {
		t.Fatalf("loaded trainer at step %d", loaded.Steps())
	}
	want, _ := Load(src, filepath.Join(whole, run.CheckpointFile))
	if !reflect.DeepEqual(loaded.Export(), want.Export()) {
		t.Fatal("the two runs export different encoders")
	}
	if _, err := Load(syntheticSource(600, 3), filepath.Join(parts, run.CheckpointFile)); !errors.Is(err, run.ErrResumeMismatch) {
		t.Fatalf("load on other states: %v", err)
	}
}

// A cancelled run leaves a checkpoint of its last step.
func TestCancelledRunCheckpoints(t *testing.T) {
	src := syntheticSource(600, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, _, err := Train(ctx, src, tinyRunConfig(), Options{Options: run.Options{Dir: dir}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	ck, err := checkpoint.Read(filepath.Join(dir, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if ck.Algorithm != Algorithm || ck.Iteration != 0 {
		t.Fatalf("checkpoint of %s at step %d, want %s at 0", ck.Algorithm, ck.Iteration, Algorithm)
	}
}

// The evaluation's codes over m subsets are the mean of the encoder's mean
// latent over exactly those m subsets, each encoded on its own: a code
// averaged over fewer subsets, or over another reward's, differs.
func TestMeanCodesAverageEachRewardsOwnSubsets(t *testing.T) {
	src := syntheticSource(600, 3)
	cfg := tinyRunConfig()
	tr := mustTrainer(t, src, cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	rewards := []Reward{tr.prior.DualFormReward(rng), tr.prior.DualFormReward(rng), tr.prior.DualFormReward(rng)}
	const m = 3
	tok, z, d := cfg.Tokens, cfg.Arch.Latent, src.Dim
	b := tr.evalBatch(rewards, m*tok, 0, rng)
	got := tr.meanCodes(b, len(rewards), m)
	for r := range rewards {
		for k := range z {
			want := 0.0
			for j := range m {
				at := (r*m + j) * tok
				mean, _ := tr.model.Encode(b.EncStates[at*d:(at+tok)*d], b.EncBins[at:at+tok], 1, tok)
				want += float64(mean[k]) / m
			}
			if diff := math.Abs(got[r*z+k] - want); diff > 1e-6 {
				t.Fatalf("reward %d, latent %d: mean code %g, the mean of its %d subsets' codes %g", r, k, got[r*z+k], m, want)
			}
		}
	}
}
