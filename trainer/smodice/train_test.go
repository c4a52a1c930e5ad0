package smodice

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/wbc/wbctest"
)

// TestTrainEndToEnd trains on the synthetic task and checks that the
// pipeline finds the expert: a discriminator that tells expert states
// apart, weights that concentrate on expert transitions, and a policy that
// acts like the expert where the expert goes.
func TestTrainEndToEnd(t *testing.T) {
	d := prepared(t, 1)
	cfg := testConfig()
	dir := t.TempDir()
	start := time.Now()
	ck := train(t, d, cfg, dir, false)
	elapsed := time.Since(start)

	rep := ck.Disc
	t.Logf("discriminator: held-out accuracy %.3f (expert %.3f, offline %.3f), logits [%.2f, %.2f], clipped %.3f",
		rep.HeldOutAccuracy, rep.HeldOutExpertAccuracy, rep.HeldOutOfflineAccuracy, rep.LogitMin, rep.LogitMax, rep.ClippedFraction)
	if rep.HeldOutExpertAccuracy < 0.9 || rep.HeldOutAccuracy < 0.75 {
		t.Errorf("discriminator does not separate the expert: %+v", rep)
	}
	if float64(rep.LogitMax) > cfg.Disc.RewardClip*3 || float64(rep.LogitMin) < -cfg.Disc.RewardClip*3 {
		t.Errorf("logits [%v, %v] far past the clip: the gradient penalty is not working", rep.LogitMin, rep.LogitMax)
	}

	expertFrac := 0.0
	for _, e := range d.IsExpert {
		if e {
			expertFrac++
		}
	}
	n := float64(d.Offline.Len())
	expertFrac /= n
	est := ck.Estimate
	t.Logf("after %d iterations: ESS %.0f of %.0f, max w %.2e, KL %.3f, constraint %.3f, expert mass %.3f (expert share of data %.3f)",
		ck.Iteration, est.Weights.ESS, n, est.Weights.Max, est.Weights.KL, est.Constraint, est.ExpertMass, expertFrac)
	t.Logf("wall time %v for %d discriminator steps and %d iterations", elapsed.Round(time.Millisecond), cfg.DiscSteps, cfg.Run.Iterations)
	// The KL-regularised optimum with this r_E puts about twice the data's
	// share on expert transitions (their early states look like everyone's).
	if est.ExpertMass < 1.5*expertFrac {
		t.Errorf("expert mass %.3f: DICE does not favour the expert (share %.3f)", est.ExpertMass, expertFrac)
	}
	if !(est.Weights.KL > 0.1) || !(est.Weights.ESS < 0.9*n) || !(est.Weights.ESS > 10) {
		t.Errorf("weights: %+v", est.Weights)
	}

	// On the states of the expert's offline episodes (most far from the
	// target, where the expert acts hard) the policy's mode is close to the
	// expert's action.
	_, pi, err := ck.Policy()
	if err != nil {
		t.Fatal(err)
	}
	off, _ := datafiletest.Datasets(t, datafiletest.Small, 1)
	dim := d.Offline.ObsDim
	var states []float32
	var rawRows []int
	for i, e := range d.IsExpert {
		if e {
			states = append(states, d.Offline.Obs[i*dim:(i+1)*dim]...)
			rawRows = append(rawRows, i)
		}
	}
	acts := make([]float32, len(rawRows)*skills.NumJoints)
	pi.Mode(&nn.Tape[float32]{}, states, len(rawRows), acts)
	jp, _ := d.Contract.Layout.Field(skills.FieldJointPos)
	var errPolicy, errZero float64
	q := make([]float64, skills.NumJoints)
	for r, i := range rawRows {
		raw := off.Data.Obs[i*dim : (i+1)*dim]
		for j := range q {
			q[j] = float64(raw[jp.Offset+j])
		}
		for j := range q {
			want := datafiletest.ExpertAction(q, j)
			errPolicy += math.Abs(float64(acts[r*skills.NumJoints+j]) - want)
			errZero += math.Abs(want)
		}
	}
	errPolicy /= float64(len(acts))
	errZero /= float64(len(acts))
	t.Logf("policy on the expert's offline states: mean |a - a_expert| %.3f (acting 0 would give %.3f)", errPolicy, errZero)
	if errPolicy > 0.5*errZero {
		t.Errorf("policy does not imitate the expert: error %.3f vs %.3f", errPolicy, errZero)
	}

	s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), "ess", "disc_accuracy", "expert_mass", "seconds")
	if err != nil {
		t.Fatal(err)
	}
	perIter := 0.0
	for _, v := range s.Values["seconds"] {
		perIter += v
	}
	t.Logf("DICE iterations (value step, whole-set weights, policy step; batch %d, 64-64 networks): %.2f ms each on average",
		cfg.Value.Batch, 1e3*perIter/float64(len(s.Values["seconds"])))
	if len(s.Iteration) != cfg.Run.Iterations || s.Iteration[0] != 1 || s.Values["disc_accuracy"][7] != float64(rep.HeldOutAccuracy) {
		t.Errorf("metrics log has %d lines", len(s.Iteration))
	}
	for _, f := range []string{run.CheckpointFile, run.MetricsFile, DiscFile, LossesPlot, ESSPlot, KLPlot} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("run file %s: %v", f, err)
		}
	}
	// disc.json names each behaviour's mean reward: the expert's above the
	// behaviours the discriminator learnt to tell from it.
	var file DiscReport
	if raw, err := os.ReadFile(filepath.Join(dir, DiscFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	byMode := file.RewardByBehaviour
	t.Logf("mean r_E by behaviour: %v", byMode)
	if len(byMode) != len(d.Behaviours.Names) || file.HeldOutAccuracy != rep.HeldOutAccuracy {
		t.Errorf("disc.json: %+v, want the report and the %d behaviours %v", file, len(d.Behaviours.Names), d.Behaviours.Names)
	}
	expertName := d.Behaviours.Names[d.Behaviours.Of[slices.Index(d.IsExpert, true)]]
	for name, r := range byMode {
		if name != expertName && !(r < byMode[expertName]) {
			t.Errorf("mean r_E of %s %.3f, not below the expert's (%s) %.3f", name, r, expertName, byMode[expertName])
		}
	}
	back, err := Read(filepath.Join(dir, run.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if back.Iteration != cfg.Run.Iterations || !slices.Equal(back.Pi.Params, ck.Pi.Params) {
		t.Fatal("checkpoint on disk differs from the returned one")
	}
}

// TestResumeIsBitIdentical: 2k iterations straight, and 1k (stopped by a
// cancelled context, which writes a checkpoint) + resume + 1k, end with the
// same weights bit for bit, the policy's average (kept, as a bank deploys
// it) included. A run that ends normally and is extended is checked in
// TestResumeRefusesAnotherRun.
func TestResumeIsBitIdentical(t *testing.T) {
	// A small set: the whole-set weight pass dominates these short steps.
	d := preparedSized(t, datafiletest.Sizes{Expert: 3, Random: 6, Drift: 2, ExpertSet: 3}, 2)
	cfg := testConfig()
	cfg.DiscSteps, cfg.Run = 50, run.Settings{Iterations: 2000, CheckpointEvery: 300}
	cfg.Value.Batch, cfg.Value.InitBatch, cfg.Policy.Batch = 64, 32, 64
	cfg.Value.Hidden, cfg.Policy.Hidden = []int{32, 32}, []int{32, 32}
	cfg.Policy.Average = 0.99

	straight := train(t, d, cfg, t.TempDir(), false)
	if straight.Pi.Average == nil || slices.Equal(straight.Pi.Average, straight.Pi.Params) {
		t.Fatal("the checkpoint keeps no policy average apart from the parameters")
	}

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Train(ctx, d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}, Observe: func(r Record) {
		if r.Iteration == 1000 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run returned %v", err)
	}
	ck, err := Read(filepath.Join(dir, run.CheckpointFile))
	if err != nil || ck.Iteration != 1000 {
		t.Fatalf("checkpoint after cancel: %v, %v", ck.Iteration, err)
	}
	same(t, "1k + resume + 1k", straight, train(t, d, cfg, dir, true))
	s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile))
	if err != nil || len(s.Iteration) != 2000 || s.Iteration[1999] != 2000 {
		t.Fatalf("resumed metrics log: %d lines, %v", len(s.Iteration), err)
	}
}

func same(t *testing.T, name string, a, b *Checkpoint) {
	t.Helper()
	if a.Iteration != b.Iteration || !slices.Equal(a.Pi.Params, b.Pi.Params) || !slices.Equal(a.Pi.Average, b.Pi.Average) ||
		!slices.Equal(a.V.Params, b.V.Params) || !slices.Equal(a.Pi.Adam.V, b.Pi.Adam.V) ||
		!slices.Equal(a.RNG, b.RNG) || !slices.Equal(a.Estimate.Psi, b.Estimate.Psi) {
		t.Fatalf("%s: weights differ from the straight run", name)
	}
	t.Logf("%s: %d policy and %d value parameters identical at iteration %d", name, len(a.Pi.Params), len(a.V.Params), a.Iteration)
}

func TestResumeRefusesAnotherRun(t *testing.T) {
	d := prepared(t, 3)
	cfg := testConfig()
	cfg.DiscSteps, cfg.Run.Iterations = 20, 5
	dir := t.TempDir()
	train(t, d, cfg, dir, false)

	if _, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}}); !errors.Is(err, run.ErrRunExists) {
		t.Errorf("second run into the same directory: %v, want ErrRunExists", err)
	}
	other := cfg
	other.Policy.LR *= 2
	if _, err := Train(context.Background(), d, other, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("resume with another learning rate: %v, want ErrResumeMismatch", err)
	}
	if _, err := Train(context.Background(), prepared(t, 4), cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("resume on other data: %v, want ErrResumeMismatch", err)
	}
	shorter := cfg
	shorter.Run.Iterations = 3
	if _, err := Train(context.Background(), d, shorter, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Errorf("resume past the end: %v, want ErrResumeMismatch", err)
	}
	longer := cfg
	longer.Run.Iterations = 8
	same(t, "5 + extended to 8", train(t, d, longer, t.TempDir(), false), train(t, d, longer, dir, true))
	// A fresh directory with resume set simply starts.
	if ck := train(t, d, cfg, t.TempDir(), true); ck.Iteration != 5 {
		t.Errorf("resume into an empty directory ends at %d", ck.Iteration)
	}
}

// TestPolicyDrawsTiltedByTheImitationReward: with Config.Policy.Tilt set, the loop's policy
// draws are tilted by the run's r_E (the checkpoint's reward), the one its value learns from.
func TestPolicyDrawsTiltedByTheImitationReward(t *testing.T) {
	d := prepared(t, 1)
	cfg := testConfig().withSeeds()
	cfg.Policy.Tilt = 0.5
	rng := rand.New(rand.NewPCG(5, 5))
	reward := make([]float32, d.Offline.Len())
	for i := range reward {
		reward[i] = float32(rng.NormFloat64())
	}
	l, err := newLoop(d, &Checkpoint{Config: cfg, Reward: reward})
	if err != nil {
		t.Fatal(err)
	}
	wbctest.CheckTiltedBy(t, "the SMODICE-expert's policy", l.pi, reward, cfg.Policy.Tilt)
}
