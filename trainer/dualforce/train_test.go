package dualforce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/smodice"
	"github.com/dualforce/dualforce/trainer/wbc/wbctest"
)

// synthetic is the small synthetic task (data seed 1) prepared for
// training, and a short SMODICE run on it for the imitation reward: made
// once (trainTestData), shared by the tests.
var synthetic struct {
	once sync.Once
	d    *prep.Data
	ck   *smodice.Checkpoint
}

func trainTestData(t *testing.T) (*prep.Data, *smodice.Checkpoint) {
	t.Helper()
	synthetic.once.Do(func() {
		synthetic.d = preparedSynthetic(t, 1)
		cfg := smodice.DefaultConfig()
		cfg.Disc.Hidden, cfg.Disc.Batch, cfg.Disc.LR, cfg.DiscSteps = []int{64, 64}, 128, 1e-3, 400
		cfg.Value.Hidden, cfg.Policy.Hidden = []int{16}, []int{16}
		cfg.Value.Batch, cfg.Value.InitBatch, cfg.Policy.Batch = 64, 64, 64
		cfg.Run = run.Settings{Iterations: 1, CheckpointEvery: 1}
		ck, err := smodice.Train(context.Background(), synthetic.d, cfg, smodice.Options{Options: run.Options{Dir: t.TempDir(), Quiet: true}})
		if err != nil {
			t.Fatal(err)
		}
		synthetic.ck = ck
	})
	if synthetic.ck == nil {
		t.Fatal("the shared SMODICE run failed (see the first test that made it)")
	}
	return synthetic.d, synthetic.ck
}

func preparedSynthetic(t *testing.T, seed uint64) *prep.Data {
	t.Helper()
	return preptest.Synthetic(t, datafiletest.Small, seed, true)
}

func testTrainConfig(t *testing.T) TrainConfig {
	t.Helper()
	cfg, err := DefaultTrainConfig("locomotion")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Value.Hidden, cfg.Policy.Hidden = []int{64, 64}, []int{64, 64}
	cfg.Value.Batch, cfg.Value.InitBatch, cfg.Value.ChunkRows, cfg.Policy.Batch = 256, 128, 4096, 256
	cfg.Value.LR, cfg.Policy.LR = 1e-3, 1e-3
	cfg.Loop.ValueSteps, cfg.Loop.PolicySteps = 1, 1
	cfg.Run = run.Settings{Iterations: 40, CheckpointEvery: 10}
	return cfg
}

// testInputs are r_E and a frozen random FRE encoder over d's states (4
// subsets of 64 states per latent).
func testInputs(d *prep.Data, rE []float32) TrainInputs {
	net := frozenRandomFRE(rand.New(rand.NewPCG(7, 7)), d.Offline.ObsDim)
	anchors := skills.Array{Shape: []int{128, d.Offline.ObsDim}, Data: d.Offline.Obs[:128*d.Offline.ObsDim]}
	return TrainInputs{RE: rE, LatentDim: 8, Encoder: func(_ int, rng *rand.Rand) (Encoder, error) {
		return NewFREEncoder(net, d.Offline.Obs, d.Offline.ObsDim, 4, 64, rng)
	}, BankFRE: &skills.FRE{Net: *net, Anchors: anchors, Subsets: 2}}
}

func trainRun(t *testing.T, d *prep.Data, in TrainInputs, cfg TrainConfig, dir string, resume bool) *skills.Bank {
	t.Helper()
	b, err := Train(context.Background(), d, in, cfg, Options{Options: run.Options{Dir: dir, Resume: resume, Quiet: true}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bankBytes(t *testing.T, b *skills.Bank) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := skills.EncodeBank(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTrainStoresEveryLatentAndResumesBitIdentically runs the whole
// pipeline at test scale: a bank with one slot per skill and every latent
// met, its metrics log and figures, and a run stopped halfway and resumed
// that exports the same bank byte for byte. The weight passes refresh one
// of three blocks per iteration (the paper-scale default's mechanism), so
// the checkpoint must carry their kept values, stopped mid-rotation; the
// policies are averaged (the bank deploys the averages), so it must carry
// those too. The policies are mixtures of three Gaussians, which the bank
// stores as such.
func TestTrainStoresEveryLatentAndResumesBitIdentically(t *testing.T) {
	d, ck := trainTestData(t)
	cfg := testTrainConfig(t)
	cfg.Policy.Average, cfg.Policy.Components = 0.9, 3
	cfg.Value.RefreshRows, cfg.Loop.StaleCheckEvery = d.Offline.Len()/3+1, 5
	// Rehearsal on, keeping 3 snapshots: the checkpoint must carry them, with their stride grown.
	cfg.Loop.RehearsalSteps, cfg.Loop.RehearsalRows, cfg.Loop.RehearsalKeep = 1, 64, 3
	in := testInputs(d, ck.Reward)
	dir := t.TempDir()
	start := time.Now()
	straight := trainRun(t, d, in, cfg, dir, false)
	t.Logf("%d outer iterations, %d skills, %d transitions: %v", cfg.Run.Iterations, cfg.Skills, d.Offline.Len(), time.Since(start).Round(time.Millisecond))
	if len(straight.Slots) != 3 || len(straight.Latents) != 3*cfg.Run.Iterations {
		t.Fatalf("bank of %d slots and %d latents, want 3 and %d", len(straight.Slots), len(straight.Latents), 3*cfg.Run.Iterations)
	}
	if straight.FRE == nil || straight.LatentDim != 8 || straight.Components != 3 {
		t.Errorf("bank without its FRE encoder, or latents of %d values (want 8), or %d components (want 3)", straight.LatentDim, straight.Components)
	}
	bankPath := filepath.Join(dir, "bank.npz")
	if err := skills.WriteBank(bankPath, straight); err != nil {
		t.Fatal(err)
	}
	if back, err := skills.ReadBank(bankPath); err != nil || len(back.Latents) != len(straight.Latents) || back.Components != 3 {
		t.Fatalf("bank read back: %v", err)
	}
	last := straight.Latents[len(straight.Latents)-1].Info
	if last.Skill != 2 || last.Iteration != cfg.Run.Iterations || len(last.OfflinePsi) != d.FeatureDim {
		t.Errorf("last latent %+v", last)
	}
	staleKey := skillset.SkillKey(keyStaleError, 2)
	s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), skillset.SkillKey("phi", 0), KeyObjective, staleKey)
	if err != nil || len(s.Iteration) != cfg.Run.Iterations {
		t.Fatalf("metrics log: %v, %d lines", err, len(s.Iteration))
	}
	var measured []float64
	for k, e := range s.Values[staleKey] {
		if want := (k+1)%cfg.Loop.StaleCheckEvery == 0; want != !math.IsNaN(e) || e < 0 || e > 1 {
			t.Fatalf("iteration %d: weight-pass error %v", k+1, e)
		}
		if !math.IsNaN(e) {
			measured = append(measured, e)
		}
	}
	t.Logf("weight-pass error of skill 2 (total variation) at iterations 5, 10, ...: %.4f", measured)
	checkBehaviourMass(t, d, dir, cfg.Skills)

	half := cfg
	half.Run.Iterations = cfg.Run.Iterations / 2
	dir2 := t.TempDir()
	trainRun(t, d, in, half, dir2, false)
	resumed := trainRun(t, d, in, cfg, dir2, true)
	if !bytes.Equal(bankBytes(t, straight), bankBytes(t, resumed)) {
		t.Fatal("the resumed run's bank differs from the uninterrupted run's")
	}
}

// checkBehaviourMass: every metrics line of the run in dir has each skill's
// weight on each of the data's behaviours, a skill's masses add up to its
// whole weight, 1, and the run drew them (BehavioursPlot).
func checkBehaviourMass(t *testing.T, d *prep.Data, dir string, nSkills int) {
	t.Helper()
	if d.Behaviours == nil || len(d.Behaviours.Names) < 2 {
		t.Fatal("the test data carry no behaviour labels to weigh")
	}
	var keys []string
	for i := range nSkills {
		for _, name := range d.Behaviours.Names {
			keys = append(keys, BehaviourMassKey(name, i))
		}
	}
	s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), keys...)
	if err != nil {
		t.Fatal(err)
	}
	nb := len(d.Behaviours.Names)
	for k := range s.Iteration {
		for i := range nSkills {
			total := 0.0
			for _, key := range keys[i*nb : (i+1)*nb] {
				m := s.Values[key][k]
				if !(m >= 0) {
					t.Fatalf("iteration %d: %s = %v", k+1, key, m)
				}
				total += m
			}
			if math.Abs(total-1) > 1e-6 {
				t.Fatalf("iteration %d: skill %d's masses add up to %v, want 1", k+1, i, total)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, BehavioursPlot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", BehavioursPlot, err)
	}
}

// TestIterationRecordsEachBehavioursMass: an iteration's record carries, under
// each behaviour's own name, the weight the skill's weights put on that
// behaviour's transitions, and the behaviours' masses differ (so a mix-up of
// names would show).
func TestIterationRecordsEachBehavioursMass(t *testing.T) {
	d, ck := trainTestData(t)
	tr, err := newTrainer(d, testInputs(d, ck.Reward), testTrainConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := tr.Iterate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := d.Behaviours
	for i := range tr.cfg.Skills {
		want := b.Mass(tr.loop.Weights(i))
		if slices.Min(want) == slices.Max(want) {
			t.Fatalf("skill %d: every behaviour holds %v of the weight; the test cannot tell them apart", i, want[0])
		}
		for k, name := range b.Names {
			if got := float64(rec[BehaviourMassKey(name, i)]); got != want[k] {
				t.Errorf("skill %d, behaviour %s: mass %v recorded, its weights hold %v", i, name, got, want[k])
			}
		}
	}
}

func TestTrainRefusesBadInputBeforeTraining(t *testing.T) {
	d, ck := trainTestData(t)
	cfg := testTrainConfig(t)
	cfg.Run.Iterations = 1
	encoderFails := errors.New("no encoder")
	for _, tc := range []struct {
		name   string
		change func(*TrainInputs, *TrainConfig)
		want   error
	}{
		{"reward of another set", func(in *TrainInputs, _ *TrainConfig) { in.RE = in.RE[1:] }, ErrConfig},
		{"NaN reward", func(in *TrainInputs, _ *TrainConfig) { in.RE[7] = float32(math.NaN()) }, new(dataset.NonFiniteError)},
		{"one skill", func(_ *TrainInputs, c *TrainConfig) { c.Skills = 1 }, ErrConfig},
		{"l0 zero", func(_ *TrainInputs, c *TrainConfig) { c.Loop.L0 = 0 }, ErrConfig},
		{"encoder fails", func(in *TrainInputs, _ *TrainConfig) {
			in.Encoder = func(int, *rand.Rand) (Encoder, error) { return nil, encoderFails }
		}, encoderFails},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, c := testInputs(d, slices.Clone(ck.Reward)), cfg
			tc.change(&in, &c)
			dir := filepath.Join(t.TempDir(), "run")
			_, err := Train(context.Background(), d, in, c, Options{Options: run.Options{Dir: dir, Quiet: true}})
			var nf *dataset.NonFiniteError
			if errors.As(tc.want, &nf) {
				if !errors.As(err, &nf) {
					t.Fatalf("err %v, want a NonFiniteError", err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the run directory was made (%v) before the input was refused", err)
			}
		})
	}
}

// iterationJudge scores skill i of a checkpoint's bank by how near its latent's iteration
// is to best[i], and keeps what it was shown.
type iterationJudge struct {
	best  []int
	shown [][]skills.LatentInfo
}

func (j *iterationJudge) JudgeBank(_ context.Context, b *skills.Bank) (run.Verdict, error) {
	var v run.Verdict
	infos := make([]skills.LatentInfo, len(b.Latents))
	for k, l := range b.Latents {
		infos[k] = l.Info
		d := float64(l.Info.Iteration - j.best[k])
		v.Parts = append(v.Parts, -d*d)
		v.Score += -d * d / float64(len(b.Latents))
	}
	j.shown = append(j.shown, infos)
	return v, nil
}

// A judged run is shown each skill's latest latent at every checkpoint, and returns each
// skill as the same run stopped at that skill's best-judged iteration has it: that
// iteration's policy and the skill's latents met up to it. With the policies averaged, the
// policy of an iteration is its average, read from the checkpoint as from the learner.
func TestJudgedRunTakesEachSkillFromItsBestCheckpoint(t *testing.T) {
	d, ck := trainTestData(t)
	cfg := testTrainConfig(t)
	cfg.Policy.Average = 0.9
	in := testInputs(d, ck.Reward)
	judge := &iterationJudge{best: []int{20, 40, 10}}
	judged, err := Train(context.Background(), d, in, cfg, Options{Options: run.Options{Dir: t.TempDir(), Quiet: true, Judge: Judge(judge)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(judge.shown) != cfg.Run.Iterations/cfg.Run.CheckpointEvery {
		t.Fatalf("%d checkpoints judged, want %d", len(judge.shown), cfg.Run.Iterations/cfg.Run.CheckpointEvery)
	}
	for c, infos := range judge.shown {
		it := (c + 1) * cfg.Run.CheckpointEvery
		if len(infos) != cfg.Skills {
			t.Fatalf("check %d was shown %d latents, want one per skill", c, len(infos))
		}
		for i, info := range infos {
			if info.Skill != i || info.Iteration != it {
				t.Fatalf("check %d, latent %d: skill %d of iteration %d, want skill %d of %d", c, i, info.Skill, info.Iteration, i, it)
			}
		}
	}
	stoppedAt := map[int]*skills.Bank{}
	for _, it := range judge.best {
		stopped := cfg
		stopped.Run.Iterations = it
		stoppedAt[it] = trainRun(t, d, in, stopped, t.TempDir(), false)
	}
	want := *stoppedAt[40]
	want.Slots, want.Latents = slices.Clone(want.Slots), nil
	for _, l := range stoppedAt[40].Latents {
		if it := judge.best[l.Info.Skill]; l.Info.Iteration <= it {
			want.Latents = append(want.Latents, l)
		}
	}
	for i, it := range judge.best {
		want.Slots[i] = stoppedAt[it].Slots[i]
	}
	if len(judged.Latents) != 20+40+10 || !bytes.Equal(bankBytes(t, judged), bankBytes(t, &want)) {
		t.Fatalf("the judged run's bank (%d latents) does not take each skill from its best iteration %v", len(judged.Latents), judge.best)
	}
}

// BankFromCheckpoint refuses a checkpoint it cannot export, naming the cause.
func TestBankFromCheckpointRefusesBadCheckpoints(t *testing.T) {
	d, ck := trainTestData(t)
	cfg := testTrainConfig(t)
	cfg.Run = run.Settings{Iterations: 2, CheckpointEvery: 1}
	dir := t.TempDir()
	trainRun(t, d, testInputs(d, ck.Reward), cfg, dir, false)
	read := func() *checkpoint.File {
		f, err := checkpoint.Read(filepath.Join(dir, run.CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if b, err := BankFromCheckpoint(read(), nil); err != nil || len(b.Latents) != 2*cfg.Skills {
		t.Fatalf("the good checkpoint: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		change     func(*checkpoint.File)
	}{
		{"another algorithm", "a smodice checkpoint", func(f *checkpoint.File) { f.Algorithm = "smodice" }},
		{"config not JSON", "config", func(f *checkpoint.File) { f.Config = []byte("{") }},
		// The deployed policy: the task's default averages it.
		{"no policy of skill 1", "skill1.policy_average", func(f *checkpoint.File) { delete(f.Float32, skillset.DeployedPolicy(1, cfg.Policy.Average > 0)) }},
		{"policy cut short", "skill 2", func(f *checkpoint.File) {
			p := skillset.DeployedPolicy(2, cfg.Policy.Average > 0)
			f.Float32[p] = f.Float32[p][:100]
		}},
		{"a latent missing", ArrayZ, func(f *checkpoint.File) { f.Float32[ArrayZ] = f.Float32[ArrayZ][8:] }},
		{"later iteration than its latents", "values", func(f *checkpoint.File) { f.Iteration++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := read()
			tc.change(f)
			_, err := BankFromCheckpoint(f, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestPolicyDrawsTiltedByTheImitationReward: with TrainConfig.Policy.Tilt set, every skill's
// policy draws are tilted by r_E (TrainInputs.RE), not by the skill's mixed reward.
func TestPolicyDrawsTiltedByTheImitationReward(t *testing.T) {
	d, ck := trainTestData(t)
	in := testInputs(d, ck.Reward)
	cfg := testTrainConfig(t)
	cfg.Policy.Tilt = 0.5
	tr, err := newTrainer(d, in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, pi := range tr.policies {
		wbctest.CheckTiltedBy(t, fmt.Sprintf("skill %d's policy", i), pi, in.RE, cfg.Policy.Tilt)
	}
}
