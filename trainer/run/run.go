// Package run owns the harness every training loop runs in: the run
// directory, checkpoint and resume (a run resumed from its checkpoint ends
// bit for bit where an uninterrupted run ends, provided the loop saves all
// it changes), the JSON-lines metrics log, the figures redrawn from it, the
// progress bar and cancellation, and, given a Judge, the judging of
// checkpoints with the best one kept (and the best of each part, for a
// verdict in parts such as a Dual-Force run's skills). A loop (SMODICE-expert, Dual-Force,
// DOI) supplies its iteration, its checkpoint and its figures; the harness
// knows nothing of what they hold.
package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// Files of a run directory.
const (
	CheckpointFile = "checkpoint.npz"
	MetricsFile    = "metrics.jsonl"
)

// Settings are a run's generic settings: how long it runs and how often it
// saves. They are the only settings that may change when a run is resumed.
type Settings struct {
	Iterations      int `json:"iterations"`
	CheckpointEvery int `json:"checkpoint_every"`
}

// ErrSettings reports unusable settings.
var ErrSettings = errors.New("run: bad settings")

// Validate checks the settings.
func (s Settings) Validate() error {
	if s.Iterations < 0 || s.CheckpointEvery <= 0 {
		return fmt.Errorf("%w: %d iterations, checkpoint every %d", ErrSettings, s.Iterations, s.CheckpointEvery)
	}
	return nil
}

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
	// Judge, when set, judges every periodic and the final checkpoint; the best one is kept
	// in BestCheckpointFile and every verdict logged in ChecksFile.
	Judge Judge
}

// Log returns the logger, or one that discards.
func (o Options) Log() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// ErrRunExists reports a run directory that already holds a checkpoint
// when Resume is not set.
var ErrRunExists = errors.New("run: run directory already holds a checkpoint")

// ErrResumeMismatch reports a checkpoint of another run: other algorithm,
// data, task or configuration.
var ErrResumeMismatch = errors.New("run: checkpoint is from another run")

// Identity is what a checkpoint must match to be resumed.
type Identity struct {
	Algorithm string
	Task      string
	Digest    [sha256.Size]byte
	// Config is the algorithm's configuration without the Settings.
	Config json.RawMessage
}

// Open prepares the run directory and returns its checkpoint when the run
// resumes (nil for a fresh run), checked against id and settings.
func Open(opt Options, id Identity, settings Settings) (*checkpoint.File, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	path := filepath.Join(opt.Dir, CheckpointFile)
	ck, err := checkpoint.Read(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !opt.Resume:
		return nil, fmt.Errorf("%w: %s", ErrRunExists, path)
	}
	var saved struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(ck.Config, &saved); err != nil {
		return nil, fmt.Errorf("%w: config: %w", checkpoint.ErrCheckpoint, err)
	}
	switch {
	case ck.Algorithm != id.Algorithm:
		return nil, fmt.Errorf("%w: it is a %s run, not %s", ErrResumeMismatch, ck.Algorithm, id.Algorithm)
	case ck.Digest != id.Digest:
		return nil, fmt.Errorf("%w: it was trained on other data", ErrResumeMismatch)
	case ck.Task != id.Task:
		return nil, fmt.Errorf("%w: task %q, not %q", ErrResumeMismatch, ck.Task, id.Task)
	case !jsonEqual(saved.Config, id.Config):
		return nil, fmt.Errorf("%w: configuration differs (only the iterations and the checkpoint period may change)\n saved: %s\n given: %s",
			ErrResumeMismatch, saved.Config, id.Config)
	case ck.Iteration > settings.Iterations:
		return nil, fmt.Errorf("%w: checkpoint is at iteration %d, past the %d requested", ErrResumeMismatch, ck.Iteration, settings.Iterations)
	}
	opt.Log().Info("resuming", "dir", opt.Dir, "iteration", ck.Iteration, "of", settings.Iterations)
	return ck, nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// SavedConfig is how a loop stores its configuration in a checkpoint: the
// Settings apart, so that Open compares the rest.
type SavedConfig struct {
	Settings Settings        `json:"settings"`
	Config   json.RawMessage `json:"config"`
}

// SaveConfig encodes an algorithm's configuration with its run settings as a
// checkpoint's Config (a SavedConfig), the form Open compares on resume.
func SaveConfig(settings Settings, config any) (json.RawMessage, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("run: config: %w", err)
	}
	saved, err := json.Marshal(SavedConfig{Settings: settings, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("run: config: %w", err)
	}
	return saved, nil
}

// Loop is one training algorithm's iteration, as the harness drives it.
// R is its metrics record, one JSON line per iteration.
type Loop[R any] interface {
	// Iterate runs the next iteration and returns its record.
	Iterate(ctx context.Context) (R, error)
	// Describe is the progress bar's text after a record.
	Describe(R) string
	// Checkpoint returns the loop's whole state after its last iteration.
	Checkpoint() (*checkpoint.File, error)
	// Plot draws the run's figures from the metrics log in dir.
	Plot(dir string) error
}

// PlotInterval is the shortest wall time between two drawings of the
// figures during a run.
const PlotInterval = time.Minute

// Drive runs loop from iteration done to settings.Iterations: it appends a
// record per iteration to the metrics log (cut back to done, the
// checkpoint's iteration, on resume), saves a checkpoint every
// CheckpointEvery iterations and at the end, redraws the figures at the
// end and at most once per PlotInterval, and shows progress. A fresh run
// (fresh set) saves its state before the first iteration. With opt.Judge it
// judges every checkpoint it saves after a period or at the end (and, on
// resume, such a checkpoint an interruption left unjudged); a checkpoint
// saved on interruption is not judged. When ctx is cancelled it saves the
// last finished iteration and returns ctx's error. observe, when not nil,
// sees every record right after it is logged.
func Drive[R any](ctx context.Context, loop Loop[R], name string, settings Settings, done int, fresh bool, opt Options, observe func(R)) error {
	ckPath := filepath.Join(opt.Dir, CheckpointFile)
	mlog, err := metrics.Resume(filepath.Join(opt.Dir, MetricsFile), done)
	if err != nil {
		return err
	}
	defer mlog.Close()
	judging, err := openJudging(opt.Judge, opt.Dir, done)
	if err != nil {
		return err
	}
	defer judging.close()
	// judgedAt says whether the checkpoint of iteration it is one to judge.
	judgedAt := func(it int) bool {
		return judging != nil && it > 0 && (it%settings.CheckpointEvery == 0 || it == settings.Iterations)
	}
	lastPlot := time.Now()
	save := func(final bool) error {
		ck, err := loop.Checkpoint()
		if err != nil {
			return err
		}
		if err := checkpoint.Write(ckPath, ck); err != nil {
			return err
		}
		if final || time.Since(lastPlot) >= PlotInterval {
			lastPlot = time.Now()
			if err := loop.Plot(opt.Dir); err != nil {
				return err
			}
		}
		if judgedAt(ck.Iteration) && ctx.Err() == nil {
			return judging.check(ctx, ck, opt)
		}
		return nil
	}
	if fresh {
		if err := save(false); err != nil {
			return err
		}
	} else if judgedAt(done) && judging.last < done {
		ck, err := loop.Checkpoint()
		if err != nil {
			return err
		}
		if err := judging.check(ctx, ck, opt); err != nil {
			return err
		}
	}
	finish := func(unsaved bool) error {
		if unsaved {
			return save(true)
		}
		return loop.Plot(opt.Dir)
	}
	bar := metrics.NewBar(opt.Progress, settings.Iterations, done, name, opt.Quiet)
	saved := done
	for it := done; it < settings.Iterations; it++ {
		if ctx.Err() != nil {
			bar.Finish()
			if err := finish(it != saved); err != nil {
				return err
			}
			opt.Log().Info("interrupted", "iteration", it, "checkpoint", ckPath)
			return ctx.Err()
		}
		rec, err := loop.Iterate(ctx)
		if err != nil {
			bar.Finish()
			return fmt.Errorf("%w (the checkpoint in %s holds iteration %d)", err, opt.Dir, saved)
		}
		if err := mlog.Write(rec); err != nil {
			return err
		}
		if observe != nil {
			observe(rec)
		}
		bar.Set(it + 1)
		bar.Describe(loop.Describe(rec))
		if (it+1)%settings.CheckpointEvery == 0 {
			if err := save(false); err != nil {
				return err
			}
			saved = it + 1
		}
	}
	bar.Finish()
	return finish(saved != settings.Iterations)
}
