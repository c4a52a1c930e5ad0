package doi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/smodice"
	"github.com/dualforce/dualforce/trainer/wbc/wbctest"
)

// The cross-entropy gradient against central differences of the loss (trainer/internal/gradcheck),
// and a broken gradient caught by the same check.
func TestCrossEntropyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, rows = 3, 4
	logits := make([]float64, n*rows)
	for i := range logits {
		logits[i] = 2 * rng.NormFloat64()
	}
	labels := []int{0, 2, 1, 2}
	grad, scratch := make([]float64, len(logits)), make([]float64, len(logits))
	crossEntropy(logits, labels, n, grad)
	loss := func() float64 { return crossEntropy(logits, labels, n, scratch) }
	gradcheck.Check(t, "cross-entropy", logits, grad, loss, 1e-6)
	if r := gradcheck.Compare(logits, gradcheck.Broken(grad, 2, 0.1), loss); r.Worst < 1e-3 {
		t.Fatalf("a broken gradient passed the check (error %g)", r.Worst)
	}
}

// testConfig is small enough for a run to take seconds.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Disc.Hidden, cfg.Disc.Batch, cfg.Disc.LR = []int{64, 64}, 128, 1e-3
	cfg.DiscSteps = 300
	cfg.Value.Hidden, cfg.Policy.Hidden, cfg.ClassifierHidden = []int{64, 64}, []int{64, 64}, []int{32}
	cfg.Value.Batch, cfg.Value.InitBatch, cfg.Value.ChunkRows, cfg.Policy.Batch = 256, 128, 4096, 256
	cfg.Value.LR, cfg.Policy.LR, cfg.ClassifierLR = 1e-3, 1e-3, 1e-3
	cfg.ClassifierBatch, cfg.MuLR = 64, 0.2
	cfg.ValueSteps, cfg.PolicySteps = 1, 1
	cfg.Run = run.Settings{Iterations: 60, CheckpointEvery: 30}
	return cfg
}

func prepared(t testing.TB) *prep.Data {
	t.Helper()
	return preptest.Synthetic(t, datafiletest.Small, 1, true)
}

// A small DOI run end to end: metrics per skill in the log, the multipliers inside their
// bound, a bank of n slots and n latents that validates and survives a write and read; a
// second run into the same directory without Resume is refused.
func TestTrainSmall(t *testing.T) {
	d := prepared(t)
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"plain", func(*Config) {}},
		{"DISDAIN", func(c *Config) { c.DISDAIN, c.Ensemble = 0.5, 3 }},
		{"tilted", func(c *Config) { c.Policy.Tilt = 0.5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			dir := t.TempDir()
			l, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}})
			if err != nil {
				t.Fatal(err)
			}
			cols, err := metrics.Columns(filepath.Join(dir, run.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"phi_0", "sigma_2", "ess_1", "q_entropy", "classifier_loss", "disdain_bonus", "mean_min_distance", "expert_mass_0"} {
				if !slices.Contains(cols, want) {
					t.Errorf("metrics lack %q (have %q)", want, cols)
				}
			}
			s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), "q_entropy", "mean_min_distance", "disdain_bonus")
			if err != nil {
				t.Fatal(err)
			}
			last := len(s.Iteration) - 1
			t.Logf("%s: after %d iterations H(q) %.3f nats (uniform %.3f), mean min SF distance %.3f, DISDAIN bonus %.4f, sigmoid(mu) %.3f",
				tc.name, len(s.Iteration), s.Values["q_entropy"][last], math.Log(3), s.Values["mean_min_distance"][last], s.Values["disdain_bonus"][last], l.Multipliers())
			if len(s.Iteration) != cfg.Run.Iterations {
				t.Fatalf("%d records", len(s.Iteration))
			}
			for _, m := range l.Multipliers() {
				if lo, hi := skillset.Sigmoid(-skillset.MuBound), skillset.Sigmoid(skillset.MuBound); m < lo-1e-12 || m > hi+1e-12 {
					t.Fatalf("sigmoid(mu) %v outside [%v, %v]", m, lo, hi)
				}
			}
			if cfg.Policy.Tilt > 0 {
				for z, s := range l.skills {
					wbctest.CheckTiltedBy(t, fmt.Sprintf("skill %d's policy", z), s.pi, l.rE, cfg.Policy.Tilt)
				}
			}
			bank, err := l.Bank()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "bank.npz")
			if err := skills.WriteBank(path, bank); err != nil {
				t.Fatal(err)
			}
			back, err := skills.ReadBank(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Slots) != 3 || len(back.Latents) != 3 || back.Latents[2].Info.Name != "doi-skill2" || back.Latents[1].Info.Skill != 1 ||
				back.Latents[0].Info.Iteration != cfg.Run.Iterations || len(back.Latents[0].Info.OfflinePsi) != d.FeatureDim {
				t.Fatalf("bank latents %+v", back.Latents)
			}
			if _, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}}); !errors.Is(err, run.ErrRunExists) {
				t.Fatalf("a second run into the directory: %v", err)
			}
		})
	}
}

// SMODICE-dagger (sigmoid(mu) pinned at 1: every skill imitates, no diversity term) is the
// collapse check: all skills get the same reward.
func TestDaggerRewardIsImitationOnly(t *testing.T) {
	d := prepared(t)
	rE := make([]float32, d.Offline.Len())
	for i := range rE {
		rE[i] = float32(math.Sin(float64(i)))
	}
	cfg := testConfig()
	cfg.FixedMu = true
	l, err := NewLoop(d, Imitation{Reward: rE}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Iterate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for z, s := range l.skills {
		if !slices.Equal(s.reward, rE) {
			t.Fatalf("skill %d's reward is not r_E", z)
		}
	}
	// Plain DOI at sigmoid(0) = 1/2: half the log-ratio of q, half r_E.
	cfg.FixedMu = false
	l, err = NewLoop(d, Imitation{Reward: rE}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Iterate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// l.probs is the q the rewards were made of: classifyAll runs at the start of an iteration.
	i := 17
	q := l.probs[i*3+1]
	if got, want := float64(l.skills[1].reward[i]), 0.5*math.Log(3*q)/3+0.5*float64(rE[i]); math.Abs(got-want) > 1e-5 {
		t.Fatalf("reward %v, want %v", got, want)
	}
}

func TestConfigRefused(t *testing.T) {
	d := prepared(t)
	for name, edit := range map[string]func(*Config){
		"one skill":            func(c *Config) { c.Skills = 1 },
		"DISDAIN alone":        func(c *Config) { c.DISDAIN = 0.1 },
		"negative mu rate":     func(c *Config) { c.MuLR = -1 },
		"NaN eps":              func(c *Config) { c.Epsilon = math.NaN() },
		"infinite DISDAIN":     func(c *Config) { c.DISDAIN, c.Ensemble = math.Inf(1), 2 },
		"latent-conditioned":   func(c *Config) { c.Value.Latent = 3 },
		"no classifier batch":  func(c *Config) { c.ClassifierBatch = 0 },
		"Polyak floor of zero": func(c *Config) { c.MinAlpha = 0 },
	} {
		cfg := testConfig()
		edit(&cfg)
		if _, err := NewLoop(d, Imitation{Reward: make([]float32, d.Offline.Len())}, cfg); err == nil || !strings.Contains(err.Error(), "doi: bad configuration") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewLoop(d, Imitation{Reward: make([]float32, 3)}, testConfig()); err == nil {
		t.Error("a short r_E was taken")
	}
	bad := Imitation{Reward: make([]float32, d.Offline.Len()), Ratios: make([]float64, d.Offline.Len())}
	if _, err := NewLoop(d, bad, testConfig()); !errors.Is(err, ErrImitation) {
		t.Errorf("ratios that are not a distribution: %v", err)
	}
}

func TestKLTo(t *testing.T) {
	w, ref := []float64{0.5, 0.5, 0}, []float64{0.25, 0.25, 0.5}
	if got := klTo(w, ref); math.Abs(got-math.Log(2)) > 1e-12 {
		t.Fatalf("KL %v, want log 2", got)
	}
	if got := klTo(ref, ref); got != 0 {
		t.Fatalf("KL of a distribution to itself %v", got)
	}
}

// DOI imitating a SMODICE-expert run: its r_E and its ratios, the constraint KL(d_z || d_E)
// (non-negative, unlike Dual-Force's phi which is shifted by E_w r_E), and data of another run
// refused.
func TestImitatesASMODICERun(t *testing.T) {
	d := prepared(t)
	scfg := smodice.DefaultConfig()
	scfg.Disc.Hidden, scfg.Disc.Batch, scfg.DiscSteps = []int{32}, 128, 100
	scfg.Value.Hidden, scfg.Policy.Hidden = []int{32}, []int{32}
	scfg.Value.Batch, scfg.Value.InitBatch, scfg.Value.ChunkRows, scfg.Policy.Batch = 128, 64, 4096, 128
	scfg.Run = run.Settings{Iterations: 20, CheckpointEvery: 20}
	ck, err := smodice.Train(context.Background(), d, scfg, smodice.Options{Options: run.Options{Dir: t.TempDir(), Quiet: true}})
	if err != nil {
		t.Fatal(err)
	}
	im, err := ExpertImitation(d, ck)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(im.Reward, ck.Reward) || dice.CheckWeights(im.Ratios) != nil {
		t.Fatal("the imitation target is not the run's r_E and weights")
	}
	cfg := testConfig()
	cfg.Run.Iterations = 5
	dir := t.TempDir()
	l, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Quiet: true}, Expert: ck})
	if err != nil {
		t.Fatal(err)
	}
	// Resumed with the same SMODICE run, or with none (the checkpoint holds the target); a
	// SMODICE run of another reward is refused.
	for _, expert := range []*smodice.Checkpoint{ck, nil} {
		cfg.Run.Iterations++
		if l, err = Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}, Expert: expert}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.ratios, im.Ratios) {
			t.Fatal("the resumed run does not imitate the SMODICE run's ratios")
		}
	}
	otherReward := *ck
	otherReward.Reward = slices.Clone(ck.Reward)
	otherReward.Reward[0]++
	if _, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: true, Quiet: true}, Expert: &otherReward}); !errors.Is(err, run.ErrResumeMismatch) {
		t.Fatalf("resumed with another SMODICE run: %v", err)
	}
	for z, s := range l.skills {
		if !(s.phi >= 0) || math.Abs(s.phi-klTo(s.polyak.W, im.Ratios)) > 1e-12 {
			t.Fatalf("skill %d: constraint %v, KL to the expert's ratios %v", z, s.phi, klTo(s.polyak.W, im.Ratios))
		}
	}
	other := *ck
	other.Digest[0] ^= 1
	if _, err := ExpertImitation(d, &other); !errors.Is(err, ErrImitation) {
		t.Fatalf("a run on other data: %v", err)
	}
}
