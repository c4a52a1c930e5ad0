package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dualforce/dualforce/trainer/bc"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/prep"
)

func init() {
	register(command{name: "fit", summary: "fit a behaviour-cloning baseline bank (bc)", run: methods(fitUsage, "fit method", map[string]runFunc{"bc": runFitBC})})
}

const fitUsage = `Usage: dualforce fit <method> [flags]

Methods:
  bc   behaviour cloning of one labelled behaviour of an offline dataset
`

const fitBCUsage = `Usage: dualforce fit bc --offline FILE --mode expert|<mode> --out bank.npz [flags]

Clones, with uniform weights, the transitions of one behaviour of the offline dataset (a mode
name from its manifest, or "expert" for the expert's) into the same policy head the trained
banks use, and writes a one-latent bank named "<mode> fit" and tagged "bc": the behaviour-
cloning baseline to evaluate the trained banks against, not a trained skill. The observation
statistics are fitted on the whole offline set, as for training. The policy learns at Adam 3e-4
and the bank gets its last iterate (--policy-lr, --policy-average): the default 20,000 steps
are enough at that rate; fewer steps need the training methods' 1e-3 and averaging 0.99.
--policy-components K clones into a mixture of K Gaussians (train smodice --help says why).
--drop-falls clones only the episodes that do not end in a fall (filtered behaviour cloning):
for a behaviour such as the navigation expert's over route, which falls in part of its episodes.
`

func runFitBC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := bc.DefaultConfig()
	fs := newFlagSet("fit bc", fitBCUsage, stderr)
	offline := fs.String("offline", "", "offline dataset archive (required)")
	mode := fs.String("mode", bc.ExpertLabel, `behaviour to clone: "expert" or a mode name`)
	dropFalls := fs.Bool("drop-falls", false, "clone only the behaviour's episodes that do not end in a fall")
	out := fs.String("out", "", "bank to write (required)")
	task := fs.String("task", "", "task the data must be for: locomotion or navigation (default: the dataset's)")
	steps := fs.Int("steps", def.Steps, "gradient steps")
	batch := fs.Int("batch", def.Policy.Batch, "transitions per step")
	seed := fs.Uint64("seed", def.Seed, "seed of every random choice")
	policy := addPolicyFlags(fs, def.Policy, false)
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *offline == "" || *out == "":
		return usagef("--offline and --out are required")
	case *steps < 0 || *batch <= 0:
		return usagef("--steps %d, --batch %d: want a non-negative step count and a positive batch", *steps, *batch)
	}
	if err := policy.check(); err != nil {
		return err
	}
	if err := checkOutputFiles(*out); err != nil {
		return err
	}
	cfg := def
	cfg.Steps, cfg.Policy.Batch, cfg.Seed = *steps, *batch, *seed
	policy.apply(&cfg.Policy, "")

	off, err := datafile.ReadOffline(*offline)
	if err != nil {
		return err
	}
	sel, err := bc.Select(off, *mode)
	if err != nil {
		return err
	}
	if *dropFalls {
		var dropped int
		if sel, dropped, err = sel.WithoutFalls(off); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "--drop-falls: %d episodes of %q that end in a fall left out\n", dropped, sel.Label)
	}
	in, err := prep.FromFiles(*task, off, nil)
	if err != nil {
		return err
	}
	data, err := prep.Prepare(in)
	if err != nil {
		return err
	}
	start := time.Now()
	pi, rep, err := bc.Fit(ctx, data, sel, cfg, stderr, *quiet)
	if err != nil {
		return err
	}
	bank, err := bc.Bank(data, sel, pi)
	if err != nil {
		return err
	}
	if err := saveBank(*out, bank); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fit %q on %d of %d transitions in %v: final NLL %.3f, mean |action error| %.3f\nbank: %s (latent %q, tags %q)\n",
		sel.Label, rep.Transitions, data.Offline.Len(), time.Since(start).Round(time.Millisecond), rep.FinalLoss, rep.MeanAbsError,
		*out, bank.Latents[0].Info.Name, bank.Latents[0].Info.Tags)
	return nil
}
