package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/dualforce/dualforce/trainer/doi"
	"github.com/dualforce/dualforce/trainer/metrics"
	trainrun "github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/smodice"
)

const trainDOIUsage = `Usage: dualforce train doi --offline FILE [--expert FILE] --out DIR [flags]

Trains the DOI baseline (Vlastelica et al. 2024) on the same data and machinery as
SMODICE-expert and Dual-Force: the discriminator's imitation reward r_E, then n skills with
one-hot codes, each a KL-dual value learner and a weighted-BC policy on the reward
(1 - sigmoid(mu_z)) log(n q(z|phi(s)))/n + sigmoid(mu_z) r_E, where q is a softmax classifier
of the skills' weighted states; the weights are Polyak-averaged and the multipliers keep each
skill's constraint phi_z under --eps. --disdain W adds the DISDAIN bonus (disagreement of an
ensemble of --ensemble classifiers) with weight W. --dagger pins sigmoid(mu) at 1
(SMODICE-dagger, the collapse check). --smodice RUN imitates a SMODICE-expert run on the same
data, as the DOI authors do: its r_E instead of a discriminator trained here, and its
occupancy ratios eta_E for each skill's constraint KL(d_z || d_E); without it the constraint is
Dual-Force's phi_z (log N + sum w (log w - r_E)).

Writes into DIR: metrics.jsonl (per skill phi_z, sigma_z, ESS, losses, expert mass; the
classifier's loss and mean entropy H(q), which nears log n when q collapses to uniform; the
DISDAIN bonus; the mean minimum distance of the skills' offline SFs), checkpoint.npz (the
whole state, written atomically every --checkpoint-every iterations and on Ctrl-C) and
bank.npz (n slots, one latent per skill, doi-skill<z>), unless --bank says where.
'dualforce report DIR' plots the metrics. --policy-lr, --policy-average,
--policy-components, --policy-tilt and --policy-temperature are train smodice's, with every
method's defaults (1e-3, 0.99, 1, 0, 1) whatever the task (train smodice --help says why).

--resume continues a run from DIR's checkpoint and ends with the same bank, bit for bit, as an
uninterrupted run; only --iters and --checkpoint-every may change between the two, and a
checkpoint of other data or another configuration is refused. A resumed run imitates the r_E
(and SMODICE ratios) its checkpoint holds: no discriminator is trained again, and --smodice,
if given, must name the run it started with.
`

func runTrainDOI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := doi.DefaultConfig()
	fs := newFlagSet("train doi", trainDOIUsage, stderr)
	tf := addTrainingFlags(fs, def.Run, def.DiscSteps, def.Value, def.ValueSteps, def.PolicySteps, def.Policy, def.Seed, false)
	nSkills := fs.Int("skills", def.Skills, "number of skills n")
	eps := fs.Float64("eps", def.Epsilon, "constraint bound eps on phi_z (paper: locomotion 4, navigation 1)")
	disdain := fs.Float64("disdain", 0, "weight of the DISDAIN bonus (0: plain DOI)")
	ensemble := fs.Int("ensemble", 4, "classifiers in the DISDAIN ensemble (with --disdain)")
	dagger := fs.Bool("dagger", false, "pin sigmoid(mu) at 1: SMODICE-dagger")
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint")
	expertRun := fs.String("smodice", "", "a SMODICE-expert run directory on the same data: imitate its r_E and ratios (constraint KL(d_z || d_E)) instead of training a discriminator")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	cfg := def
	cfg.Run, cfg.DiscSteps, cfg.Seed, cfg.Skills = tf.settings(), *tf.discSteps, *tf.seed, *nSkills
	cfg.ValueSteps, cfg.PolicySteps, cfg.Epsilon, cfg.FixedMu = *tf.valueSteps, *tf.policySteps, *eps, *dagger
	if *disdain > 0 {
		cfg.DISDAIN, cfg.Ensemble = *disdain, *ensemble
	}
	data, err := tf.load(stdout, stderr)
	if err != nil {
		return err
	}
	tf.applyLearners(&cfg.Value, &cfg.Policy, data.Task)
	var expertCk *smodice.Checkpoint
	if *expertRun != "" {
		if expertCk, err = smodice.Read(filepath.Join(*expertRun, trainrun.CheckpointFile)); err != nil {
			return err
		}
	}
	start := time.Now()
	var last map[string]metrics.Num
	log := slog.New(slog.NewTextHandler(stderr, nil))
	oneBLASThread(log)
	l, err := doi.Train(ctx, data, cfg, doi.Options{
		Options: trainrun.Options{Dir: *tf.out, Resume: *resume, Progress: stderr, Quiet: *tf.quiet, Logger: log},
		Observe: func(r map[string]metrics.Num) { last = r }, Expert: expertCk,
	})
	switch {
	case errors.Is(err, doi.ErrConfig):
		return fmt.Errorf("%w: %w", errUsage, err)
	case l != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stdout, "interrupted; checkpoint in %s (continue with --resume); writing the bank of the iterations done\n", *tf.out)
	case err != nil:
		return explainRunExists(err)
	}
	if last != nil {
		fmt.Fprintf(stdout, "iteration %v: H(q) %.3f nats (uniform %.3f), mean min SF distance %.3f, sigmoid(mu) %.3f (%v)\n",
			last["iteration"], last["q_entropy"], math.Log(float64(cfg.Skills)), last["mean_min_distance"], l.Multipliers(), time.Since(start).Round(time.Millisecond))
	}
	bank, berr := l.Bank()
	if berr != nil {
		return berr
	}
	if berr := saveBank(*tf.bank, bank); berr != nil {
		return berr
	}
	fmt.Fprintf(stdout, "bank: %s (%d skills)\n", *tf.bank, len(bank.Latents))
	return err
}
