package fre

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/run"
)

// Files of a run directory besides run's.
const (
	EvalFile   = "eval.json"
	LossesPlot = "losses.png"
)

// Options are how a run reports and where it writes.
type Options struct {
	run.Options
	// Eval sizes the evaluation at the end of the run.
	Eval EvalConfig
}

// Record is one line of metrics.jsonl: one training step.
type Record struct {
	Step  int         `json:"iteration"`
	Recon metrics.Num `json:"recon"`
	KL    metrics.Num `json:"kl"`
	Total metrics.Num `json:"total"`
	// LR is the learning rate the step was taken with.
	LR      metrics.Num `json:"lr"`
	Seconds metrics.Num `json:"seconds"`
}

// Train runs (or resumes) FRE pre-training on src for cfg.Run.Iterations
// steps in the run harness (trainer/run: checkpoints that resume bit for
// bit, metrics.jsonl, plots, progress) and returns the trainer and the
// evaluation of the final model, also written to the run directory. When
// ctx is cancelled it checkpoints the last step and returns the trainer
// with ctx's error.
func Train(ctx context.Context, src *Source, cfg Config, opt Options) (*Trainer, *Report, error) {
	tr, err := NewTrainer(src, cfg)
	if err != nil {
		return nil, nil, err
	}
	cfg = tr.Config()
	id := cfg
	id.Run = run.Settings{}
	cfgJSON, err := json.Marshal(id)
	if err != nil {
		return nil, nil, fmt.Errorf("fre: %w", err)
	}
	file, err := run.Open(opt.Options, run.Identity{Algorithm: Algorithm, Task: src.Task, Digest: src.Digest(), Config: cfgJSON}, cfg.Run)
	if err != nil {
		return nil, nil, err
	}
	if file != nil {
		if err := tr.restoreFile(file); err != nil {
			return nil, nil, err
		}
	}
	err = run.Drive(ctx, run.Loop[Record]((*loop)(tr)), "FRE", cfg.Run, tr.Steps(), file == nil, opt.Options, nil)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return tr, nil, err
	}
	if err != nil {
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

// loop is a Trainer as the run harness drives it.
type loop Trainer

func (l *loop) Iterate(context.Context) (Record, error) {
	start := time.Now()
	tr := (*Trainer)(l)
	ls := tr.Step()
	lr := tr.opt.LR // the rate this step was taken with
	return Record{Step: tr.Steps(), Recon: metrics.Num(ls.Recon), KL: metrics.Num(ls.KL), Total: metrics.Num(ls.Total), LR: metrics.Num(lr),
		Seconds: metrics.Num(time.Since(start).Seconds())}, nil
}

func (l *loop) Describe(r Record) string { return fmt.Sprintf("FRE recon %.4f KL %.2f", r.Recon, r.KL) }

func (l *loop) Checkpoint() (*checkpoint.File, error) { return (*Trainer)(l).file() }

// Plot draws the paper's training-metrics row from the metrics log:
// reconstruction, KL and total loss per step.
func (l *loop) Plot(dir string) error {
	s, err := metrics.ReadSeries(filepath.Join(dir, run.MetricsFile), "recon", "kl", "total")
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
