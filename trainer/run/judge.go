package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// Files of a run directory whose checkpoints are judged.
const (
	// ChecksFile logs every judged checkpoint, one JSON line (a Check) each.
	ChecksFile = "checks.jsonl"
	// BestCheckpointFile holds the best-judged checkpoint so far.
	BestCheckpointFile = "best-checkpoint.npz"
	// ChecksPlot draws the scores over the iterations.
	ChecksPlot = "checks.png"
)

// A Judge scores the policy a checkpoint holds, higher is better: for instance its mean
// return over a few rollouts in the simulator. Training losses say little about how a policy
// acts (a SMODICE-expert at the paper's scale walked at iteration 600 and stood at 1000 while
// its loss still fell), so a judged run keeps its best-judged checkpoint beside its last.
//
// A Judge must be deterministic: a run resumed from a checkpoint that an interruption left
// unjudged judges it then, and must reach the choice an uninterrupted run reaches.
type Judge interface {
	Judge(ctx context.Context, ck *checkpoint.File) (Verdict, error)
}

// A BankJudge scores a policy by the skill bank it exports (eval.Checker: rollouts in the
// simulator); an algorithm's Judge adapts one to its checkpoints.
type BankJudge interface {
	JudgeBank(ctx context.Context, b *skills.Bank) (Verdict, error)
}

// Verdict is a Judge's score of one checkpoint, with what it is made of for people.
type Verdict struct {
	Score   float64
	Summary string
}

// Check is one judged checkpoint: a line of ChecksFile.
type Check struct {
	Iteration int         `json:"iteration"`
	Score     metrics.Num `json:"score"`
	Summary   string      `json:"summary"`
	// Best says the checkpoint is the best judged so far: it was written to
	// BestCheckpointFile. A later score at least as high replaces it (the longer-trained
	// policy wins a tie); a NaN score never does.
	Best bool `json:"best"`
}

// ErrNoChecks reports a run directory without a judged checkpoint.
var ErrNoChecks = errors.New("run: no judged checkpoint")

// Selected returns the best-judged checkpoint's Check from the log in dir; its state is in
// dir's BestCheckpointFile.
func Selected(dir string) (Check, error) {
	checks, err := ReadChecks(dir)
	if err != nil {
		return Check{}, err
	}
	for i := len(checks) - 1; i >= 0; i-- {
		if checks[i].Best {
			return checks[i], nil
		}
	}
	return Check{}, fmt.Errorf("%w in %s", ErrNoChecks, dir)
}

// BestCheckpoint reads the best-judged checkpoint of the run in dir (BestCheckpointFile)
// with its Check, and makes sure the two agree on the iteration.
func BestCheckpoint(dir string) (*checkpoint.File, Check, error) {
	best, err := Selected(dir)
	if err != nil {
		return nil, Check{}, err
	}
	f, err := checkpoint.Read(filepath.Join(dir, BestCheckpointFile))
	if err != nil {
		return nil, Check{}, err
	}
	if f.Iteration != best.Iteration {
		return nil, Check{}, fmt.Errorf("%w: %s holds iteration %d, but %s names %d as the best", checkpoint.ErrCheckpoint, BestCheckpointFile, f.Iteration, ChecksFile, best.Iteration)
	}
	return f, best, nil
}

// ReadChecks reads dir's ChecksFile (none: no checks). A line cut short by a crash can only
// be the last one and is dropped.
func ReadChecks(dir string) ([]Check, error) {
	return metrics.Records[Check](filepath.Join(dir, ChecksFile))
}

// judging judges a run's checkpoints and keeps the best one.
type judging struct {
	judge Judge
	dir   string
	log   *metrics.Log
	best  *Check
	// last is the iteration of the last check (0: none).
	last int
}

// openJudging resumes dir's checks log at iteration done (nil without a judge).
func openJudging(judge Judge, dir string, done int) (*judging, error) {
	if judge == nil {
		return nil, nil
	}
	log, err := metrics.Resume(filepath.Join(dir, ChecksFile), done)
	if err != nil {
		return nil, err
	}
	checks, err := ReadChecks(dir)
	if err != nil {
		log.Close()
		return nil, err
	}
	j := &judging{judge: judge, dir: dir, log: log}
	for _, c := range checks {
		if c.Best {
			j.best = &c
		}
		j.last = c.Iteration
	}
	return j, nil
}

// check judges ck, writes it to BestCheckpointFile when it is the best so far, and logs it.
func (j *judging) check(ctx context.Context, ck *checkpoint.File, opt Options) error {
	v, err := j.judge.Judge(ctx, ck)
	if err != nil {
		return fmt.Errorf("run: judging iteration %d: %w", ck.Iteration, err)
	}
	c := Check{Iteration: ck.Iteration, Score: metrics.Num(v.Score), Summary: v.Summary,
		Best: !math.IsNaN(v.Score) && (j.best == nil || v.Score >= float64(j.best.Score))}
	if c.Best {
		if err := checkpoint.Write(filepath.Join(j.dir, BestCheckpointFile), ck); err != nil {
			return err
		}
		j.best = &c
	}
	if err := j.log.Write(c); err != nil {
		return err
	}
	j.last = c.Iteration
	if err := j.plot(); err != nil {
		return err
	}
	args := []any{"iteration", c.Iteration, "score", v.Score, "summary", v.Summary}
	if j.best != nil {
		args = append(args, "best_iteration", j.best.Iteration, "best_score", j.best.Score)
	}
	opt.Log().Info("checked", args...)
	return nil
}

// plot redraws ChecksPlot from the checks log.
func (j *judging) plot() error {
	s, err := metrics.ReadSeries(filepath.Join(j.dir, ChecksFile), "score")
	if err != nil {
		return err
	}
	return metrics.WritePNG(filepath.Join(j.dir, ChecksPlot), "iteration", metrics.Panel{
		Title: "judged checkpoints (the best is kept)", YLabel: "score", Lines: []metrics.Line{{Name: "score", X: s.Iteration, Y: s.Values["score"]}},
	})
}

func (j *judging) close() error {
	if j == nil {
		return nil
	}
	return j.log.Close()
}
