package smodice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// Config sets up a run. DefaultConfig gives the project's values.
type Config struct {
	// Seed derives every other seed: the discriminator's, the hold-out
	// split's and DICE's (their own Seed fields are overwritten).
	Seed uint64
	Disc disc.Config
	// DiscSteps is the number of discriminator steps.
	DiscSteps int
	// HoldOut is the fraction of each set kept out of discriminator
	// training to measure its accuracy.
	HoldOut float64
	DICE    dice.Config
	// Iterations is the number of DICE iterations (value steps, a weight
	// pass and policy steps each, see dice.Trainer.Iterate).
	Iterations int
	// CheckpointEvery is the number of iterations between checkpoints.
	CheckpointEvery int
}

// DefaultConfig is the spec's discriminator (256-256 tanh, Adam 3e-4,
// batch 256, penalty 10, r_E clipped at 6.9) trained 20000 steps with 10%
// held out, and DICE with its defaults (256-256 ReLU, Adam 3e-4, batch
// 8192, gamma 0.99) for 20000 iterations, checkpointed every 500.
func DefaultConfig() Config {
	return Config{
		Seed: 1, Disc: disc.DefaultConfig(), DiscSteps: 20000, HoldOut: 0.1,
		DICE: dice.DefaultConfig(), Iterations: 20000, CheckpointEvery: 500,
	}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("smodice: bad configuration")

func (c Config) validate() error {
	if c.DiscSteps < 0 || !(c.HoldOut >= 0 && c.HoldOut < 1) || c.Iterations < 0 || c.CheckpointEvery <= 0 {
		return fmt.Errorf("%w: disc steps %d, hold-out %v, iterations %d, checkpoint every %d",
			ErrConfig, c.DiscSteps, c.HoldOut, c.Iterations, c.CheckpointEvery)
	}
	return nil
}

// withSeeds returns c with the component seeds derived from Seed.
func (c Config) withSeeds() Config {
	c.Disc.Seed = c.Seed
	c.DICE.Seed = c.Seed ^ 0x5eed_d1ce
	return c
}

// resumable reports whether a run saved with config saved may continue
// under c: everything but the length of the run and the checkpoint period
// must be the same.
func (c Config) resumable(saved Config) bool {
	c.Iterations, c.CheckpointEvery = saved.Iterations, saved.CheckpointEvery
	return reflect.DeepEqual(c.withSeeds(), saved.withSeeds())
}

// plotInterval is the shortest wall time between two drawings of the
// figures during a run.
const plotInterval = time.Minute

// Files of a run directory.
const (
	CheckpointFile = "checkpoint.ckpt"
	MetricsFile    = "metrics.jsonl"
	DiscFile       = "disc.json"
	LossesPlot     = "losses.png"
	ESSPlot        = "ess.png"
	KLPlot         = "kl.png"
)

// Options are how a run reports and where it writes.
type Options struct {
	// Dir is the run directory (created if missing).
	Dir string
	// Resume continues from Dir's checkpoint when there is one. Without it
	// a directory that already holds a checkpoint is refused.
	Resume bool
	// Progress receives the progress bar (shown only on a terminal and
	// without Quiet).
	Progress io.Writer
	Quiet    bool
	Logger   *slog.Logger
	// Observe, when set, sees every metrics record right after it is logged.
	Observe func(Record)
}

// Record is one line of metrics.jsonl: one DICE iteration.
type Record struct {
	Iteration  int         `json:"iteration"`
	ValueLoss  metrics.Num `json:"value_loss"`
	PolicyLoss metrics.Num `json:"policy_loss"`
	// ESS, MaxW and KL describe the whole-set weights (dice.WeightStats).
	ESS  metrics.Num `json:"ess"`
	MaxW metrics.Num `json:"max_w"`
	KL   metrics.Num `json:"kl"`
	// Constraint is Estimate.Constraint.
	Constraint metrics.Num `json:"constraint"`
	// ExpertMass is the weight on expert transitions; null without labels.
	ExpertMass metrics.Num `json:"expert_mass"`
	// BehaviourMass is the weight on each behaviour of the dataset (withheld
	// labels, read for this log only); absent without labels.
	BehaviourMass map[string]metrics.Num `json:"behaviour_mass,omitempty"`
	// DiscAccuracy is the discriminator's held-out accuracy (constant over
	// a run, repeated so every line stands alone).
	DiscAccuracy metrics.Num `json:"disc_accuracy"`
	// Seconds is the wall time of the iteration.
	Seconds metrics.Num `json:"seconds"`
}

// ErrRunExists reports a run directory that already holds a checkpoint
// when Resume is not set.
var ErrRunExists = errors.New("smodice: run directory already holds a checkpoint")

// ErrResumeMismatch reports a checkpoint of another run: other data, task
// or configuration.
var ErrResumeMismatch = errors.New("smodice: checkpoint is from another run")

// Train runs (or resumes) SMODICE-expert on d and returns the final
// checkpoint, which is also in opt.Dir. When ctx is cancelled it writes a
// checkpoint of the last finished iteration and returns ctx's error.
func Train(ctx context.Context, d *Data, cfg Config, opt Options) (*Checkpoint, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Expert == nil {
		return nil, fmt.Errorf("smodice: train needs expert states: %w", dataset.ErrEmptyExpert)
	}
	cfg = cfg.withSeeds()
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	ckPath := filepath.Join(opt.Dir, CheckpointFile)
	ck, err := ReadCheckpoint(ckPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ck = nil
	case err != nil:
		return nil, err
	case !opt.Resume:
		return nil, fmt.Errorf("%w: %s", ErrRunExists, ckPath)
	}
	if ck != nil {
		if err := d.checkResume(ck, cfg); err != nil {
			return nil, err
		}
		ck.Config = cfg
		log.Info("resuming", "dir", opt.Dir, "iteration", ck.DICE.Iteration, "of", cfg.Iterations)
	} else {
		if ck, err = d.pretrain(ctx, cfg, opt, log); err != nil {
			return nil, err
		}
	}

	tr, err := dice.New(d.Offline, ck.Reward, cfg.DICE)
	if err != nil {
		return nil, err
	}
	if ck.DICE.RNG != nil {
		if err := tr.Restore(ck.DICE); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
		}
	}
	mlog, err := metrics.Resume(filepath.Join(opt.Dir, MetricsFile), ck.DICE.Iteration)
	if err != nil {
		return nil, err
	}
	defer mlog.Close()

	lastPlot := time.Now()
	// save writes a checkpoint; the figures are redrawn at the end of a run
	// and at most once per plotInterval, since drawing costs more than
	// many short iterations.
	save := func(final bool) error {
		ck.DICE = tr.State()
		ck.Estimate = d.estimate(tr.Weights(), ck.Reward, true)
		if err := WriteCheckpoint(ckPath, ck); err != nil {
			return err
		}
		if final || time.Since(lastPlot) >= plotInterval {
			lastPlot = time.Now()
			return writePlots(opt.Dir)
		}
		return nil
	}
	if ck.DICE.RNG == nil { // a fresh run: the first checkpoint holds the discriminator
		if err := save(false); err != nil {
			return nil, err
		}
	}

	finish := func(unsaved bool) error {
		if unsaved {
			return save(true)
		}
		return writePlots(opt.Dir)
	}

	bar := metrics.NewBar(opt.Progress, cfg.Iterations, ck.DICE.Iteration, "SMODICE", opt.Quiet)
	saved := ck.DICE.Iteration
	for it := ck.DICE.Iteration; it < cfg.Iterations; it++ {
		if ctx.Err() != nil {
			bar.Finish()
			if err := finish(it != saved); err != nil {
				return nil, err
			}
			log.Info("interrupted", "iteration", it, "checkpoint", ckPath)
			return ck, ctx.Err()
		}
		start := time.Now()
		diag, w, err := tr.Iterate()
		if err != nil {
			bar.Finish()
			return nil, fmt.Errorf("smodice: %w (the checkpoint in %s holds iteration %d)", err, opt.Dir, saved)
		}
		est := d.estimate(w, ck.Reward, false)
		rec := Record{
			Iteration: diag.Iteration, ValueLoss: metrics.Num(diag.ValueLoss), PolicyLoss: metrics.Num(diag.PolicyLoss),
			ESS: metrics.Num(est.Weights.ESS), MaxW: metrics.Num(est.Weights.Max), KL: metrics.Num(est.Weights.KL),
			Constraint: metrics.Num(est.Constraint), ExpertMass: metrics.Num(est.ExpertMass),
			DiscAccuracy: metrics.Num(ck.Disc.HeldOutAccuracy), Seconds: metrics.Num(time.Since(start).Seconds()),
		}
		if b := d.Behaviours; b != nil {
			mass := b.Mass(w)
			rec.BehaviourMass = make(map[string]metrics.Num, len(mass))
			for k, m := range mass {
				rec.BehaviourMass[b.Names[k]] = metrics.Num(m)
			}
		}
		if err := mlog.Write(rec); err != nil {
			return nil, err
		}
		if opt.Observe != nil {
			opt.Observe(rec)
		}
		bar.Set(diag.Iteration)
		bar.Describe(fmt.Sprintf("SMODICE ESS %.0f KL %.3f", est.Weights.ESS, est.Weights.KL))
		if diag.Iteration%cfg.CheckpointEvery == 0 {
			if err := save(false); err != nil {
				return nil, err
			}
			saved = diag.Iteration
		}
	}
	bar.Finish()
	if err := finish(saved != cfg.Iterations); err != nil {
		return nil, err
	}
	log.Info("SMODICE done", "iterations", cfg.Iterations, "ess", ck.Estimate.Weights.ESS,
		"kl", ck.Estimate.Weights.KL, "constraint", ck.Estimate.Constraint, "expert_mass", ck.Estimate.ExpertMass)
	return ck, nil
}

func (d *Data) checkResume(ck *Checkpoint, cfg Config) error {
	switch {
	case ck.Digest != d.Digest:
		return fmt.Errorf("%w: it was trained on other data", ErrResumeMismatch)
	case ck.Task != d.Task:
		return fmt.Errorf("%w: task %q, not %q", ErrResumeMismatch, ck.Task, d.Task)
	case !cfg.resumable(ck.Config):
		return fmt.Errorf("%w: configuration differs (only iterations and the checkpoint period may change)\n saved: %+v\n given: %+v",
			ErrResumeMismatch, ck.Config, cfg)
	case ck.DICE.Iteration > cfg.Iterations:
		return fmt.Errorf("%w: checkpoint is at iteration %d, past the %d requested", ErrResumeMismatch, ck.DICE.Iteration, cfg.Iterations)
	case len(ck.Reward) != d.Offline.Len():
		return fmt.Errorf("%w: %d rewards for %d transitions", ErrCheckpoint, len(ck.Reward), d.Offline.Len())
	}
	return nil
}

// pretrain trains the discriminator, writes its report and returns the
// first checkpoint (without DICE state).
func (d *Data) pretrain(ctx context.Context, cfg Config, opt Options, log *slog.Logger) (*Checkpoint, error) {
	log.Info("training the discriminator", "steps", cfg.DiscSteps, "expert_states", len(d.Expert)/d.Offline.ObsDim,
		"offline_states", d.Offline.Len())
	rep, net, reward, err := d.trainDiscriminator(ctx, cfg, opt)
	if err != nil {
		return nil, err
	}
	log.Info("discriminator", "held_out_accuracy", rep.HeldOutAccuracy, "expert_accuracy", rep.HeldOutExpertAccuracy,
		"offline_accuracy", rep.HeldOutOfflineAccuracy, "logit_min", rep.LogitMin, "logit_max", rep.LogitMax,
		"clipped_fraction", rep.ClippedFraction)
	err = skills.WriteFileAtomic(filepath.Join(opt.Dir, DiscFile), 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
	if err != nil {
		return nil, err
	}
	return &Checkpoint{
		Version: CheckpointVersion, Config: cfg, Task: d.Task, Digest: d.Digest, Contract: d.Contract,
		ObsDim: d.Offline.ObsDim, ActDim: d.Offline.ActDim, Disc: rep, DiscParams: net, Reward: reward,
	}, nil
}

// estimate summarises the weights w of one iteration; the successor
// features (an N x features pass) only when withPsi is set, for checkpoints.
func (d *Data) estimate(w []float64, reward []float32, withPsi bool) Estimate {
	est := Estimate{Weights: dice.Summarise(w), ExpertMass: math.NaN()}
	wr := 0.0
	for i, wi := range w {
		wr += wi * float64(reward[i])
	}
	est.Constraint = est.Weights.KL - wr
	if d.IsExpert != nil {
		est.ExpertMass, _ = dice.ExpertMass(w, d.IsExpert)
	}
	if withPsi {
		f := d.FeatureDim
		psi := make([]float64, f)
		for i, wi := range w {
			for j, p := range d.Phi[i*f : (i+1)*f] {
				psi[j] += wi * float64(p)
			}
		}
		est.Psi = make([]float32, f)
		for j, p := range psi {
			est.Psi[j] = float32(p)
		}
	}
	return est
}

// writePlots draws the run's figures from its metrics log.
func writePlots(dir string) error {
	s, err := metrics.ReadSeries(filepath.Join(dir, MetricsFile), "value_loss", "policy_loss", "ess", "kl", "constraint")
	if err != nil {
		return err
	}
	x := s.Iteration
	line := func(name, key string) metrics.Line { return metrics.Line{Name: name, X: x, Y: s.Values[key]} }
	if err := metrics.WritePNG(filepath.Join(dir, LossesPlot), "iteration",
		metrics.Panel{Title: "DICE value loss (KL dual)", YLabel: "loss", Lines: []metrics.Line{line("value", "value_loss")}},
		metrics.Panel{Title: "weighted BC policy loss", YLabel: "-mean log pi, draws by w", Lines: []metrics.Line{line("policy", "policy_loss")}},
	); err != nil {
		return err
	}
	if err := metrics.WritePNG(filepath.Join(dir, ESSPlot), "iteration",
		metrics.Panel{Title: "effective sample size (sum w)^2 / sum w^2", YLabel: "transitions", Lines: []metrics.Line{line("ESS", "ess")}},
	); err != nil {
		return err
	}
	return metrics.WritePNG(filepath.Join(dir, KLPlot), "iteration",
		metrics.Panel{Title: "KL estimate log N + sum w log w", YLabel: "nats", Lines: []metrics.Line{line("KL(d || d_O)", "kl"), line("constraint (KL - E_w r_E)", "constraint")}},
	)
}

// holdOut splits n row indices into a training and a held-out part of
// about frac*n rows (at least one of each when n >= 2 and frac > 0).
func holdOut(rng *rand.Rand, n int, frac float64) (train, held []int) {
	perm := rng.Perm(n)
	k := int(frac * float64(n))
	if frac > 0 && n >= 2 {
		k = min(max(k, 1), n-1)
	}
	return perm[k:], perm[:k]
}
