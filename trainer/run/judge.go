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
	// Parts, when set, score independent parts of the checkpoint (a Dual-Force run's
	// skills, each a policy of its own); each part's best-judged checkpoint is kept as well
	// (BestPartFile), so that each part can be taken from the iteration it was best at.
	// Every Verdict of a run has the same number of parts.
	Parts []float64
}

// BestPartFile names the file that holds the best-judged checkpoint of part p so far.
func BestPartFile(p int) string { return fmt.Sprintf("best-checkpoint-part%d.npz", p) }

// Check is one judged checkpoint: a line of ChecksFile.
type Check struct {
	Iteration int         `json:"iteration"`
	Score     metrics.Num `json:"score"`
	Summary   string      `json:"summary"`
	// Best says the checkpoint is the best judged so far: it was written to
	// BestCheckpointFile. A later score at least as high replaces it (the longer-trained
	// policy wins a tie); a NaN score never does.
	Best bool `json:"best"`
	// Parts are the Verdict's part scores; BestParts says, part by part, whether this
	// checkpoint is that part's best so far (written to its BestPartFile; ties and NaN as
	// for Best).
	Parts     []metrics.Num `json:"parts,omitempty"`
	BestParts []bool        `json:"best_parts,omitempty"`
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
	return readBest(dir, BestCheckpointFile, best)
}

// SelectedPart returns the Check in which part p of the run in dir was judged best
// (BestOfPart of its log); its checkpoint is in dir's BestPartFile(p).
func SelectedPart(dir string, p int) (Check, error) {
	checks, err := ReadChecks(dir)
	if err != nil {
		return Check{}, err
	}
	if c, ok := BestOfPart(checks, p); ok {
		return c, nil
	}
	return Check{}, fmt.Errorf("%w of part %d in %s", ErrNoChecks, p, dir)
}

// BestOfPart returns the check of a log in which part p was judged best, false when no
// check scored that part.
func BestOfPart(checks []Check, p int) (Check, bool) {
	for i := len(checks) - 1; i >= 0; i-- {
		if c := checks[i]; p < len(c.BestParts) && c.BestParts[p] {
			return c, true
		}
	}
	return Check{}, false
}

// BestPartCheckpoint reads the checkpoint in which part p of the run in dir was judged best
// (BestPartFile) with its Check.
func BestPartCheckpoint(dir string, p int) (*checkpoint.File, Check, error) {
	best, err := SelectedPart(dir, p)
	if err != nil {
		return nil, Check{}, err
	}
	return readBest(dir, BestPartFile(p), best)
}

// readBest reads the checkpoint file name of dir that holds the iteration of c.
func readBest(dir, name string, c Check) (*checkpoint.File, Check, error) {
	f, err := checkpoint.Read(filepath.Join(dir, name))
	if err != nil {
		return nil, Check{}, err
	}
	if f.Iteration != c.Iteration {
		return nil, Check{}, fmt.Errorf("%w: %s holds iteration %d, but %s names %d", checkpoint.ErrCheckpoint, name, f.Iteration, ChecksFile, c.Iteration)
	}
	return f, c, nil
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
	// bestParts are the best score of every part so far (NaN: none yet).
	bestParts []float64
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
		j.keepParts(c)
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
	if j.bestParts != nil && len(v.Parts) != len(j.bestParts) {
		return fmt.Errorf("run: judging iteration %d: %d parts, earlier checks %d", ck.Iteration, len(v.Parts), len(j.bestParts))
	}
	c := Check{Iteration: ck.Iteration, Score: metrics.Num(v.Score), Summary: v.Summary,
		Best: !math.IsNaN(v.Score) && (j.best == nil || v.Score >= float64(j.best.Score))}
	if c.Best {
		if err := checkpoint.Write(filepath.Join(j.dir, BestCheckpointFile), ck); err != nil {
			return err
		}
		j.best = &c
	}
	for p, score := range v.Parts {
		c.Parts = append(c.Parts, metrics.Num(score))
		best := !math.IsNaN(score) && (j.bestParts == nil || !(score < j.bestParts[p]))
		if best {
			if err := checkpoint.Write(filepath.Join(j.dir, BestPartFile(p)), ck); err != nil {
				return err
			}
		}
		c.BestParts = append(c.BestParts, best)
	}
	j.keepParts(c)
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

// keepParts notes the part scores of c that are their part's best.
func (j *judging) keepParts(c Check) {
	if len(c.Parts) == 0 {
		return
	}
	if j.bestParts == nil {
		j.bestParts = make([]float64, len(c.Parts))
		for p := range j.bestParts {
			j.bestParts[p] = math.NaN()
		}
	}
	for p, best := range c.BestParts {
		if best && p < len(j.bestParts) {
			j.bestParts[p] = float64(c.Parts[p])
		}
	}
}

// plot redraws ChecksPlot from the checks log: the score and, when judged in parts, every
// part's.
func (j *judging) plot() error {
	checks, err := ReadChecks(j.dir)
	if err != nil {
		return err
	}
	score := metrics.Line{Name: "score"}
	var parts []metrics.Line
	for _, c := range checks {
		it := float64(c.Iteration)
		score.X, score.Y = append(score.X, it), append(score.Y, float64(c.Score))
		for p, v := range c.Parts {
			for len(parts) <= p {
				parts = append(parts, metrics.Line{Name: fmt.Sprintf("part %d", len(parts))})
			}
			parts[p].X, parts[p].Y = append(parts[p].X, it), append(parts[p].Y, float64(v))
		}
	}
	return metrics.WritePNG(filepath.Join(j.dir, ChecksPlot), "iteration", metrics.Panel{
		Title: "judged checkpoints (the best is kept, and each part's)", YLabel: "score", Lines: append([]metrics.Line{score}, parts...),
	})
}

func (j *judging) close() error {
	if j == nil {
		return nil
	}
	return j.log.Close()
}
