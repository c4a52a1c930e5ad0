package fre

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// Files of a run directory.
const (
	CheckpointFile = "checkpoint.ckpt"
	MetricsFile    = "metrics.jsonl"
	EvalFile       = "eval.json"
	LossesPlot     = "losses.png"
)

// Options are how a run reports and where it writes.
type Options struct {
	// Dir is the run directory (created if missing).
	Dir string
	// Resume continues from Dir's checkpoint when there is one. Without it
	// a directory that already holds a checkpoint is refused.
	Resume bool
	// CheckpointEvery is the number of steps between checkpoints.
	CheckpointEvery int
	// Eval sizes the evaluation at the end of the run.
	Eval EvalConfig
	// Progress receives the progress bar (shown only on a terminal and
	// without Quiet).
	Progress io.Writer
	Quiet    bool
	Logger   *slog.Logger
}

// Record is one line of metrics.jsonl: one training step.
type Record struct {
	Step    int         `json:"iteration"`
	Recon   metrics.Num `json:"recon"`
	KL      metrics.Num `json:"kl"`
	Total   metrics.Num `json:"total"`
	Seconds metrics.Num `json:"seconds"`
}

// Errors of starting a run.
var (
	// ErrRunExists reports a run directory that already holds a checkpoint
	// when Resume is not set.
	ErrRunExists = errors.New("fre: run directory already holds a checkpoint")
	// ErrResumeMismatch reports a checkpoint of another run: another source
	// or configuration.
	ErrResumeMismatch = errors.New("fre: checkpoint is from another run")
)

// plotInterval is the shortest wall time between two drawings of the
// figures during a run.
const plotInterval = time.Minute

// Train runs (or resumes) FRE pre-training on src and returns the trainer
// and the evaluation of the final model, also written to Dir. When ctx is
// cancelled it writes a checkpoint of the last step and returns ctx's error.
func Train(ctx context.Context, src *Source, cfg Config, opt Options) (*Trainer, *Report, error) {
	if opt.CheckpointEvery <= 0 {
		return nil, nil, fmt.Errorf("%w: checkpoint every %d steps", ErrConfig, opt.CheckpointEvery)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr, err := NewTrainer(src, cfg)
	if err != nil {
		return nil, nil, err
	}
	cfg = tr.Config()
	digest := src.Digest()
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("fre: %w", err)
	}
	ckPath := filepath.Join(opt.Dir, CheckpointFile)
	ck, err := ReadCheckpoint(ckPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ck = nil
	case err != nil:
		return nil, nil, err
	case !opt.Resume:
		return nil, nil, fmt.Errorf("%w: %s", ErrRunExists, ckPath)
	}
	if ck != nil {
		saved := ck.Config
		saved.Steps = cfg.Steps
		switch {
		case ck.Digest != digest:
			return nil, nil, fmt.Errorf("%w: it was trained on other states or rewards", ErrResumeMismatch)
		case !reflect.DeepEqual(saved, cfg):
			return nil, nil, fmt.Errorf("%w: configuration differs (only the number of steps may change)\n saved: %+v\n given: %+v", ErrResumeMismatch, ck.Config, cfg)
		case ck.State.Adam.Steps > cfg.Steps:
			return nil, nil, fmt.Errorf("%w: checkpoint is at step %d, past the %d requested", ErrResumeMismatch, ck.State.Adam.Steps, cfg.Steps)
		}
		if err := tr.Restore(ck.State); err != nil {
			return nil, nil, err
		}
		log.Info("resuming", "dir", opt.Dir, "step", tr.Steps(), "of", cfg.Steps)
	}
	mlog, err := metrics.Resume(filepath.Join(opt.Dir, MetricsFile), tr.Steps())
	if err != nil {
		return nil, nil, err
	}
	defer mlog.Close()

	save := func() error {
		return WriteCheckpoint(ckPath, &Checkpoint{Config: cfg, Digest: digest, State: tr.State()})
	}
	lastPlot := time.Now()
	saved := -1
	if ck != nil {
		saved = tr.Steps()
	}
	bar := metrics.NewBar(opt.Progress, cfg.Steps, tr.Steps(), "FRE", opt.Quiet)
	for tr.Steps() < cfg.Steps {
		if ctx.Err() != nil {
			bar.Finish()
			if saved != tr.Steps() {
				if err := save(); err != nil {
					return nil, nil, err
				}
			}
			log.Info("interrupted", "step", tr.Steps(), "checkpoint", ckPath)
			return tr, nil, ctx.Err()
		}
		start := time.Now()
		l := tr.Step()
		rec := Record{Step: tr.Steps(), Recon: metrics.Num(l.Recon), KL: metrics.Num(l.KL), Total: metrics.Num(l.Total),
			Seconds: metrics.Num(time.Since(start).Seconds())}
		if err := mlog.Write(rec); err != nil {
			return nil, nil, err
		}
		bar.Set(tr.Steps())
		bar.Describe(fmt.Sprintf("FRE recon %.4f KL %.2f", l.Recon, l.KL))
		if tr.Steps()%opt.CheckpointEvery == 0 {
			if err := save(); err != nil {
				return nil, nil, err
			}
			saved = tr.Steps()
			if time.Since(lastPlot) >= plotInterval {
				lastPlot = time.Now()
				if err := writePlots(opt.Dir); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	bar.Finish()
	if saved != tr.Steps() {
		if err := save(); err != nil {
			return nil, nil, err
		}
	}
	if err := writePlots(opt.Dir); err != nil {
		return nil, nil, err
	}
	rep := tr.Evaluate(opt.Eval)
	err = skills.WriteFileAtomic(filepath.Join(opt.Dir, EvalFile), 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
	if err != nil {
		return nil, nil, err
	}
	return tr, &rep, nil
}

// writePlots draws the paper's training-metrics row from the metrics log:
// reconstruction, KL and total loss per step.
func writePlots(dir string) error {
	s, err := metrics.ReadSeries(filepath.Join(dir, MetricsFile), "recon", "kl", "total")
	if err != nil {
		return err
	}
	line := func(name, key string) []metrics.Line {
		return []metrics.Line{{Name: name, X: s.Iteration, Y: s.Values[key]}}
	}
	return metrics.WritePNG(filepath.Join(dir, LossesPlot), "step",
		metrics.Panel{Title: "reconstruction (MSE of normalised rewards)", YLabel: "MSE", Lines: line("recon", "recon")},
		metrics.Panel{Title: "KL(q(z) || N(0, I))", YLabel: "nats", Lines: line("KL", "kl")},
		metrics.Panel{Title: "total loss (MSE + w KL)", YLabel: "loss", Lines: line("total", "total")},
	)
}
