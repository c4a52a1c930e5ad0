package eval

import (
	"context"
	"fmt"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/run"
)

// CheckSeed is the master seed of a Checker's rollouts. It differs from the evaluation's
// default seed (1) so that an evaluation of the chosen checkpoint measures it on rollouts it
// was not chosen by.
const CheckSeed = 7

// Checker judges training checkpoints by their banks (a bank judge for the training harness,
// trainer/run): it runs the bank's first latent for Config.Rollouts rollouts through the
// runtime core and scores it by the mean return of the task's withheld reward. The score is
// deterministic (Evaluate's results do not depend on the number of workers).
type Checker struct {
	Config Config
}

// NewChecker returns the Checker of task with the given number of rollouts and CheckSeed.
func NewChecker(task string, rollouts int) (Checker, error) {
	cfg, err := TaskConfig(task)
	if err != nil {
		return Checker{}, err
	}
	cfg.Rollouts, cfg.Seed = rollouts, CheckSeed
	return Checker{Config: cfg}, nil
}

// Accepts says whether the Checker can judge banks of contract c (the task's layout and
// policy rate), so that a training run learns it before it starts, not at its first checkpoint.
func (c Checker) Accepts(ct *skills.Contract) error { return c.Config.runs(ct) }

// JudgeBank scores b's first latent.
func (c Checker) JudgeBank(ctx context.Context, b *skills.Bank) (run.Verdict, error) {
	if len(b.Latents) == 0 {
		return run.Verdict{}, fmt.Errorf("%w: the bank has no latent", ErrConfig)
	}
	res, err := Evaluate(ctx, c.Config, Latents(b)[:1])
	if err != nil {
		return run.Verdict{}, err
	}
	s := res.Subjects[0]
	summary := fmt.Sprintf("return %.1f +- %.1f over %d rollouts of %g s, %.0f%% falls", s.MeanReturn, s.StdReturn, res.Rollouts, res.EpisodeSeconds, 100*s.FallRate)
	if res.Task == collect.TaskNavigation {
		summary += fmt.Sprintf(", %.0f%% goal", 100*s.GoalRate)
	}
	return run.Verdict{Score: s.MeanReturn, Summary: summary}, nil
}
