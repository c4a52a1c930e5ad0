package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dualforce/dualforce/trainer/eval"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/run"
)

// Files a run directory is searched for.
const (
	EvalFile    = "eval.json"
	MetricsFile = "metrics.jsonl"
)

// Run is what one run directory holds.
type Run struct {
	// Name labels the run on the page: the directory's base name.
	Name string
	Dir  string
	// Eval is the evaluation (nil if the run has none); EvalPath where it was read.
	Eval     *eval.Result
	EvalPath string
	// Logs are the metrics logs found, in path order.
	Logs []Log
}

// Log is one metrics log: its path relative to the run directory and its numeric columns.
type Log struct {
	Path    string
	Columns []string
	Series  metrics.Series
}

// ErrEmptyRun reports a run directory with neither an evaluation nor a metrics log.
var ErrEmptyRun = errors.New("report: nothing to report")

// Load reads the run directory dir: its evaluation results, checked, and its metrics logs.
func Load(dir string) (*Run, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("report: %s is not a run directory", dir)
	}
	run := &Run{Name: filepath.Base(filepath.Clean(dir)), Dir: dir}
	for _, p := range []string{filepath.Join(dir, EvalFile), filepath.Join(dir, "eval", EvalFile)} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if run.Eval, err = eval.ReadResult(p); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		run.EvalPath = p
		break
	}
	logs, err := findLogs(dir)
	if err != nil {
		return nil, err
	}
	for _, rel := range logs {
		p := filepath.Join(dir, rel)
		cols, err := metrics.Columns(p)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		s, err := metrics.ReadSeries(p, cols...)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		run.Logs = append(run.Logs, Log{Path: rel, Columns: cols, Series: s})
	}
	if run.Eval == nil && len(run.Logs) == 0 {
		return nil, fmt.Errorf("%w: %s has no %s (nor eval/%s) and no %s", ErrEmptyRun, dir, EvalFile, EvalFile, MetricsFile)
	}
	return run, nil
}

// findLogs lists the metrics logs (and the logs of judged checkpoints) in dir and its
// immediate subdirectories, relative to dir.
func findLogs(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		depth := strings.Count(rel, string(filepath.Separator))
		if d.IsDir() && rel != "." && depth >= 1 {
			return filepath.SkipDir
		}
		if !d.IsDir() && (d.Name() == MetricsFile || d.Name() == run.ChecksFile) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
