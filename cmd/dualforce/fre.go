package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/fre"
	"github.com/dualforce/dualforce/trainer/prep"
	trainrun "github.com/dualforce/dualforce/trainer/run"
)

const trainFREUsage = `Usage: dualforce train fre --offline FILE --smodice DIR --out DIR [flags]

Pre-trains the functional reward encoder (FRE) on a prior of rewards over the offline
dataset's standardised states: random linear functions, random two-layer MLPs, the 27
hand-made rewards and rewards of the Dual-Force form (1-c) <phi(s), u> + c r_E(s), with r_E
from the discriminator of the SMODICE run in --smodice (same offline dataset) and phi onto
--features. Every reward is normalised as clip(r / scale, -1, 1), one scale stored with the
encoder. Writes into DIR:
  metrics.jsonl    one JSON line per step (reconstruction MSE, KL, total loss, seconds)
  losses.png       reconstruction, KL and total loss
  checkpoint.npz   written atomically every --checkpoint-every steps and on Ctrl-C
  eval.json        held-out reconstruction per reward family (MSE, R^2 on states never
                   used in training) and identification of unseen rewards, each from
                   codes of one subset of 32 states and from the mean over the subsets
                   of the bank's anchors, as Dual-Force and the robot encode; and
                   how far a code moves when its reward changes by one multiplier step
                   or becomes another skill's (stability)

The defaults fit the 45 minutes two CPU cores are given: width 64, latent 32, decoder 256,
feed-forward 128, batch 128, 36000 steps of Adam at 1e-3, halved every 2500 steps after the
26000th, Dual-Force-form rewards drawn twice as often as each other family (about 0.05 s a
step on two quiet cores; 31 minutes on the paper-scale locomotion states with loading and
the held-out evaluation; held-out R^2 0.96-0.98 / 0.93-0.94 / 0.95-0.96 on the prior's
linear, MLP and hand-made rewards and 0.836, 0.825 and 0.820 on the Dual-Force form with
--seed 1, 2 and 3). The reference implementation's sizes and schedule (--width 128 --latent 128
--decoder 512 --ffn 256 --batch 512 --lr 0.0001 --lr-half-life 0 --family-weights 1,1,1,1
--steps 150000) take about 1 s a step here, 42 hours in all; given the same 25 minutes on
the paper-scale locomotion states, they reached held-out R^2 0.35 on Dual-Force-form rewards
where the default sizes at a constant 1e-3 reached 0.76 (trainer/fre.DefaultConfig). The KL
weight is 0.001, not the reference's 0.01 (see trainer/fre).

Every input is checked before training starts (NaN or Inf states, a dataset whose layout is
not the task's, a SMODICE run of another layout or other data). --resume continues a run
from DIR's checkpoint and ends with the same parameters, bit for bit, as an uninterrupted
run; only --steps may change between the two (the learning rate's schedule depends on the
step, not on --steps, so a longer run continues it).
`

func runTrainFRE(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := fre.DefaultConfig()
	fs := newFlagSet("train fre", trainFREUsage, stderr)
	offline := fs.String("offline", "", "offline dataset archive (required)")
	smodiceRun := fs.String("smodice", "", "SMODICE run directory (or its checkpoint file) whose discriminator gives r_E (required)")
	out := fs.String("out", "", "run directory (required)")
	task := fs.String("task", "", "task the data must be for: locomotion or navigation (default: the dataset's)")
	features := featuresFlag(fs)
	steps := fs.Int("steps", def.Run.Iterations, "training steps")
	batch := fs.Int("batch", def.Batch, "rewards per step")
	latent := fs.Int("latent", def.Arch.Latent, "latent size")
	width := fs.Int("width", def.Arch.Width(), "transformer width (half state embedding, half reward embedding)")
	ffn := fs.Int("ffn", def.Arch.FFN, "transformer feed-forward width")
	decoder := fs.Int("decoder", def.Arch.DecoderHidden[0], "decoder hidden width (three layers)")
	lr := fs.Float64("lr", def.LR, "Adam learning rate")
	decayFrom := fs.Int("lr-decay-from", def.LRDecayFrom, "steps at the full learning rate before it decays")
	halfLife := fs.Int("lr-half-life", def.LRHalfLife, "steps in which the decaying learning rate halves (0: constant)")
	weights := fs.String("family-weights", formatWeights(def.Prior.Weights), "how often each reward family is drawn: linear,mlp,hand_made,dual_force (relative)")
	pool := fs.Int("pool", defaultFREPool, "at most this many offline states (a random subset) carry the prior")
	seed := fs.Uint64("seed", def.Seed, "seed of every random choice")
	every := fs.Int("checkpoint-every", def.Run.CheckpointEvery, "steps between checkpoints")
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint")
	quiet := fs.Bool("quiet", false, trainerQuietUsage)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *offline == "" || *smodiceRun == "" || *out == "":
		return usagef("--offline, --smodice and --out are required")
	case *steps < 0 || *batch <= 0 || *every <= 0 || *pool <= 0 || *latent <= 0 || *width <= 0 || *width%2 != 0 || *ffn <= 0 || *decoder <= 0:
		return usagef("--steps %d, --batch %d, --checkpoint-every %d, --pool %d, --latent %d, --width %d, --ffn %d, --decoder %d: want positive sizes (an even width)",
			*steps, *batch, *every, *pool, *latent, *width, *ffn, *decoder)
	}
	cfg := def
	cfg.Run = trainrun.Settings{Iterations: *steps, CheckpointEvery: *every}
	cfg.Batch, cfg.LR, cfg.Seed = *batch, *lr, *seed
	cfg.LRDecayFrom, cfg.LRHalfLife = *decayFrom, *halfLife
	cfg.Arch.Latent, cfg.Arch.StateWidth, cfg.Arch.RewardWidth, cfg.Arch.FFN = *latent, *width/2, *width/2, *ffn
	cfg.Arch.DecoderHidden = []int{*decoder, *decoder, *decoder}
	w, err := parseWeights(*weights)
	if err != nil {
		return err
	}
	cfg.Prior.Weights = w
	if err := cfg.Validate(); err != nil {
		return err
	}

	announceReading(stderr, *quiet, *offline)
	data, _, rE, err := loadOfflineWithReward(*task, *offline, *smodiceRun, features())
	if err != nil {
		return err
	}
	src, err := freSource(data, rE, *pool, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "data: %d states (of the offline set), layout %s, %d features\n", src.Len(), src.Contract.Layout.Name, src.FeatureDim)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	start := time.Now()
	tr, rep, err := fre.Train(ctx, src, cfg, fre.Options{
		Options: trainrun.Options{Dir: *out, Resume: *resume, Progress: stderr, Quiet: *quiet, Logger: log},
		Eval:    fre.DefaultEvalConfig(),
	})
	if tr != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdout, "interrupted after step %d; checkpoint in %s (continue with --resume)\n", tr.Steps(), *out)
	}
	if err != nil {
		return explainRunExists(err)
	}
	fmt.Fprintf(stdout, "step %d, reward scale %.4g (%v this session)\n", tr.Steps(), tr.Prior().Scale, time.Since(start).Round(time.Millisecond))
	printFREReport(stdout, rep)
	return nil
}

func printFREReport(w io.Writer, rep *fre.Report) {
	for _, part := range []struct {
		name   string
		scores []fre.Score
	}{{"prior's rewards", rep.Seen}, {"unseen rewards", rep.Unseen}} {
		for _, s := range part.scores {
			fmt.Fprintf(w, "held-out reconstruction, %s, %-10s (%d), codes of %d states: MSE %.4f, R^2 %.3f\n", part.name, s.Family, s.Rewards, s.States, s.MSE, s.R2)
		}
	}
	for _, id := range rep.Identification {
		fmt.Fprintf(w, "identification of %d unseen rewards, codes of %d states: %.3f (", id.Rewards, id.States, id.Fraction)
		for i, f := range id.ByFamily {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%s %d: %.3f", f.Family, f.Rewards, f.Fraction)
		}
		fmt.Fprintln(w, ")")
	}
	if st := rep.Stability; st != nil {
		fmt.Fprintf(w, "stability of %d Dual-Force-form codes of %d states: distance %.3f to the same reward on other states, %.3f to c moved by %g (one multiplier step), %.3f to another skill's direction\n",
			st.Rewards, st.States, st.OtherStates, st.SmallChange, fre.StabilityStep, st.OtherSkill)
	}
}

// formatWeights is --family-weights' value of w: "1,1,1,2".
func formatWeights(w [fre.NumFamilies]float64) string {
	parts := make([]string, len(w))
	for i, v := range w {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// parseWeights reads --family-weights: one non-negative number per family,
// in the order of fre.Family.
func parseWeights(list string) ([fre.NumFamilies]float64, error) {
	var w [fre.NumFamilies]float64
	parts := strings.Split(list, ",")
	if len(parts) != len(w) {
		return w, usagef("--family-weights %q: want %d numbers (linear,mlp,hand_made,dual_force)", list, len(w))
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return w, usagef("--family-weights %q: %q is not a non-negative number", list, p)
		}
		w[i] = v
	}
	return w, nil
}

// defaultFREPool is train fre's --pool: how many offline states (at most)
// carry the prior.
const defaultFREPool = 200000

// loadOfflineWithReward reads and checks the offline dataset and the
// imitation reward r_E of every offline transition from the SMODICE run
// (directory or checkpoint file) whose discriminator trained on it, with phi
// onto features (nil: the task's). It returns the raw offline set too, for
// phi onto other fields. The expert set is not read: r_E carries what the
// loops need of it.
func loadOfflineWithReward(task, offline, smodiceRun string, features []string) (*prep.Data, *dataset.Offline, []float32, error) {
	off, err := datafile.ReadOffline(offline)
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := prep.FromFiles(task, off, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	in.Features = features
	data, err := prep.Prepare(in)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", offline, err)
	}
	rE, err := disc.ReadReward(smodiceRun, data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", offline, err)
	}
	return data, in.Offline, rE, nil
}

// featuresFlag adds --features, the fields phi projects onto, to fs; the
// returned function gives them (nil for the task's).
func featuresFlag(fs *flag.FlagSet) func() []string {
	list := fs.String("features", "", "comma-separated observation fields the diversity features phi project onto, a field[i] one value of a field (default: the task's, "+
		perTask(func(t prep.Task) string { return strings.Join(t.Features, ",") })+")")
	return func() []string {
		if *list == "" {
			return nil
		}
		return strings.Split(*list, ",")
	}
}

// freSource returns at most pool of data's standardised states, drawn with
// seed, with their features and r_E: the states an FRE run trains on.
func freSource(data *prep.Data, rE []float32, pool int, seed uint64) (*fre.Source, error) {
	n, d, f := data.Offline.Len(), data.Offline.ObsDim, data.FeatureDim
	rows := rand.New(rand.NewPCG(seed, 0x9001)).Perm(n)[:min(n, pool)]
	slices.Sort(rows)
	src := &fre.Source{Task: data.Task, Contract: data.Contract, Dim: d, FeatureDim: f}
	for _, i := range rows {
		src.States = append(src.States, data.Offline.Obs[i*d:(i+1)*d]...)
		src.Phi = append(src.Phi, data.Phi[i*f:(i+1)*f]...)
		src.RE = append(src.RE, rE[i])
	}
	return src, src.Validate()
}
