package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/run"
)

// CheckSeed is the master seed of a Checker's rollouts. It differs from the evaluation's
// default seed (1) so that an evaluation of the chosen checkpoint measures it on rollouts it
// was not chosen by.
const CheckSeed = 7

// Checker judges training checkpoints by their banks (a bank judge for the training harness,
// trainer/run): it runs every latent of the bank for Config.Rollouts rollouts through the
// runtime core and scores the bank by their mean return of the task's withheld reward. The
// score is deterministic (Evaluate's results do not depend on the number of workers).
type Checker struct {
	Config Config
}

// TaskCheckRollouts is how many rollouts judge a checkpoint of each task by default. A
// locomotion policy's return varies little between rollouts (+-2-10 of about 900 over 20 s), so
// 10 judge it in about 5 s of simulation on two cores. A navigation policy's goal rate varies
// too much for 10: a SMODICE-expert that reached the goal in 64 of 100 rollouts did so in 3 to
// 10 of each block of 10, and the 10-rollout checks of one run (90% goal) chose a checkpoint that
// reached it in 64% of 100 over a later one at 70%; 30 rollouts halve the spread for seconds a
// check.
var TaskCheckRollouts = map[string]int{collect.TaskLocomotion: 10, collect.TaskNavigation: 30}

// NewChecker returns the Checker of task in world (a built-in world or a scenario file, as the
// data's collector ran in; "": the task's) with the given number of rollouts (a negative
// number: the task's TaskCheckRollouts) and CheckSeed.
func NewChecker(task, world string, rollouts int) (Checker, error) {
	cfg, err := TaskConfig(task)
	if err != nil {
		return Checker{}, err
	}
	if world != "" {
		// Loaded now, so that a world file that has gone is an error before training starts.
		cfg.Task.World = world
		if cfg.Scenario, err = cfg.scenario(); err != nil {
			return Checker{}, err
		}
	}
	if rollouts < 0 {
		rollouts = TaskCheckRollouts[task]
	}
	cfg.Rollouts, cfg.Seed = rollouts, CheckSeed
	return Checker{Config: cfg}, nil
}

// Accepts says whether the Checker can judge banks of contract c (the task's layout and
// policy rate), so that a training run learns it before it starts, not at its first checkpoint.
func (c Checker) Accepts(ct *skills.Contract) error { return c.Config.runs(ct) }

// JudgeBank scores b by the mean return of its latents, each run for Config.Rollouts
// rollouts (a SMODICE-expert bank has one; a Dual-Force checkpoint's judge passes each
// skill's latest latent). A bank of several latents is judged in parts, one per latent, by
// its mean return.
func (c Checker) JudgeBank(ctx context.Context, b *skills.Bank) (run.Verdict, error) {
	if len(b.Latents) == 0 {
		return run.Verdict{}, fmt.Errorf("%w: the bank has no latent", ErrConfig)
	}
	res, err := Evaluate(ctx, c.Config, Latents(b))
	if err != nil {
		return run.Verdict{}, err
	}
	// outcome is one latent's result after its mean and spread.
	outcome := func(s Summary) string {
		o := fmt.Sprintf("%.0f%% falls", 100*s.FallRate)
		if res.Task == collect.TaskNavigation {
			o += fmt.Sprintf(", %.0f%% goal", 100*s.GoalRate)
		}
		return o
	}
	if len(res.Subjects) == 1 {
		s := res.Subjects[0]
		return run.Verdict{Score: s.MeanReturn, Summary: fmt.Sprintf("return %.1f +- %.1f over %d rollouts of %g s, %s",
			s.MeanReturn, s.StdReturn, res.Rollouts, res.EpisodeSeconds, outcome(s))}, nil
	}
	var v run.Verdict
	summaries := make([]string, len(res.Subjects))
	for k, s := range res.Subjects {
		v.Score += s.MeanReturn / float64(len(res.Subjects))
		v.Parts = append(v.Parts, s.MeanReturn)
		summaries[k] = fmt.Sprintf("return %.1f +- %.1f, %s", s.MeanReturn, s.StdReturn, outcome(s))
	}
	v.Summary = fmt.Sprintf("mean return %.1f of %d latents over %d rollouts of %g s each: %s", v.Score, len(summaries), res.Rollouts, res.EpisodeSeconds, strings.Join(summaries, "; "))
	return v, nil
}
