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

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/doi"
	"github.com/dualforce/dualforce/trainer/metrics"
	trainrun "github.com/dualforce/dualforce/trainer/run"
)

const trainDOIUsage = `Usage: dualforce train doi --offline FILE [--expert FILE] --out DIR [flags]

Trains the DOI baseline (Vlastelica et al. 2024) on the same data and machinery as
SMODICE-expert and Dual-Force: the discriminator's imitation reward r_E, then n skills with
one-hot codes, each a KL-dual value learner and a weighted-BC policy on the reward
(1 - sigmoid(mu_z)) log(n q(z|phi(s)))/n + sigmoid(mu_z) r_E, where q is a softmax classifier
of the skills' weighted states; the weights are Polyak-averaged and the multipliers keep each
skill's constraint phi_z under --eps. --disdain W adds the DISDAIN bonus (disagreement of an
ensemble of --ensemble classifiers) with weight W. --dagger pins sigmoid(mu) at 1
(SMODICE-dagger, the collapse check).

Writes into DIR: metrics.jsonl (per skill phi_z, sigma_z, ESS, losses, expert mass; the
classifier's loss and mean entropy H(q), which nears log n when q collapses to uniform; the
DISDAIN bonus; the mean minimum distance of the skills' offline SFs), checkpoint.npz (the
outcome so far; a DOI run does not resume) and bank.npz (n slots, one latent per skill,
doi-skill<z>), unless --bank says where. 'dualforce report DIR' plots the metrics.
`

func runTrainDOI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := doi.DefaultConfig()
	fs := newFlagSet("train doi", trainDOIUsage, stderr)
	offline := fs.String("offline", "", "offline dataset archive (required)")
	expert := fs.String("expert", "", "expert dataset archive (default: the offline file's <name>_expert.npz)")
	out := fs.String("out", "", "run directory (required)")
	task := fs.String("task", "", "task the data must be for: locomotion or navigation (default: the dataset's)")
	nSkills := fs.Int("skills", def.Skills, "number of skills n")
	iters := fs.Int("iters", def.Run.Iterations, "iterations")
	discSteps := fs.Int("disc-steps", def.DiscSteps, "discriminator training steps")
	batch := fs.Int("batch", def.Value.Batch, "DICE batch (transitions per value and policy step)")
	valueSteps := fs.Int("value-steps", def.ValueSteps, "value steps per skill and iteration")
	policySteps := fs.Int("policy-steps", def.PolicySteps, "policy steps per skill and iteration")
	eps := fs.Float64("eps", def.Epsilon, "constraint bound eps on phi_z (paper: locomotion 4, navigation 1)")
	disdain := fs.Float64("disdain", 0, "weight of the DISDAIN bonus (0: plain DOI)")
	ensemble := fs.Int("ensemble", 4, "classifiers in the DISDAIN ensemble (with --disdain)")
	dagger := fs.Bool("dagger", false, "pin sigmoid(mu) at 1: SMODICE-dagger")
	seed := fs.Uint64("seed", def.Seed, "seed of every random choice")
	every := fs.Int("checkpoint-every", def.Run.CheckpointEvery, "iterations between checkpoints")
	bankPath := fs.String("bank", "", "bank to write at the end (default <out>/bank.npz)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *offline == "" || *out == "":
		return usagef("--offline and --out are required")
	case *iters < 0 || *discSteps < 0 || *valueSteps < 0 || *policySteps < 0 || *batch <= 0 || *every <= 0:
		return usagef("--iters %d, --disc-steps %d, --value-steps %d, --policy-steps %d, --batch %d, --checkpoint-every %d: want non-negative counts and a positive batch and period",
			*iters, *discSteps, *valueSteps, *policySteps, *batch, *every)
	}
	if *expert == "" {
		*expert = datafile.ExpertPath(*offline)
	}
	if *bankPath == "" {
		*bankPath = filepath.Join(*out, "bank.npz")
	}
	cfg := def
	cfg.Skills, cfg.Run.Iterations, cfg.DiscSteps, cfg.Seed, cfg.Run.CheckpointEvery = *nSkills, *iters, *discSteps, *seed, *every
	cfg.Value.Batch, cfg.Value.InitBatch, cfg.Policy.Batch = *batch, *batch, *batch
	cfg.ValueSteps, cfg.PolicySteps, cfg.Epsilon, cfg.FixedMu = *valueSteps, *policySteps, *eps, *dagger
	if *disdain > 0 {
		cfg.DISDAIN, cfg.Ensemble = *disdain, *ensemble
	}
	data, err := loadTrainingData(*task, *offline, *expert)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "data: %d offline transitions, %d expert states, task %s, layout %s\n",
		data.Offline.Len(), len(data.Expert)/data.Offline.ObsDim, data.Task, data.Contract.Layout.Name)
	start := time.Now()
	var last map[string]metrics.Num
	l, err := doi.Train(ctx, data, cfg, doi.Options{
		Options: trainrun.Options{Dir: *out, Progress: stderr, Quiet: *quiet, Logger: slog.New(slog.NewTextHandler(stderr, nil))},
		Observe: func(r map[string]metrics.Num) { last = r },
	})
	switch {
	case errors.Is(err, doi.ErrConfig):
		return fmt.Errorf("%w: %w", errUsage, err)
	case errors.Is(err, trainrun.ErrRunExists):
		return fmt.Errorf("%w (a DOI run does not resume: choose another --out)", err)
	case l != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stdout, "interrupted; writing the bank of the iterations done\n")
	case err != nil:
		return err
	}
	if last != nil {
		fmt.Fprintf(stdout, "iteration %v: H(q) %.3f nats (uniform %.3f), mean min SF distance %.3f, sigmoid(mu) %.3f (%v)\n",
			last["iteration"], last["q_entropy"], math.Log(float64(cfg.Skills)), last["mean_min_distance"], l.Multipliers(), time.Since(start).Round(time.Millisecond))
	}
	bank, berr := l.Bank()
	if berr != nil {
		return berr
	}
	if berr := skills.WriteBank(*bankPath, bank); berr != nil {
		return berr
	}
	fmt.Fprintf(stdout, "bank: %s (%d skills)\n", *bankPath, len(bank.Latents))
	return err
}
