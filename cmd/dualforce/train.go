package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/eval"
	"github.com/dualforce/dualforce/trainer/prep"
	trainrun "github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/smodice"
	"github.com/dualforce/dualforce/trainer/wbc"
)

func init() {
	register(command{name: "train", summary: "train a skill bank (smodice, dualforce, doi) or pre-train the reward encoder (fre)", run: methods(trainUsage, "training method", map[string]runFunc{"smodice": runTrainSMODICE, "doi": runTrainDOI, "fre": runTrainFRE, "dualforce": runTrainDualForce})})
}

const trainUsage = `Usage: dualforce train <method> [flags]

Methods:
  smodice   SMODICE-expert: a state discriminator gives the imitation reward r_E, DICE with
            R = r_E weights the offline transitions, a policy clones them by weight
  fre       the functional reward encoder, pre-trained on a prior of rewards over the offline
            states (needs a SMODICE run for r_E), frozen afterwards
  dualforce Dual-Force: n diverse skills held to the expert (needs the SMODICE run for r_E and
            the FRE run for the latents)
  doi       the DOI baseline: n one-hot skills, a skill discriminator q(z|phi(s)) for the
            mutual-information reward, the same DICE, multipliers and Polyak averaging
`

const trainSMODICEUsage = `Usage: dualforce train smodice --offline FILE [--expert FILE] --out DIR [flags]

Trains the SMODICE-expert policy and writes into DIR:
  disc.json        the discriminator's held-out accuracy and logit range, and the mean r_E of
                   each behaviour of the dataset (withheld labels, a diagnostic)
  metrics.jsonl    one JSON line per DICE iteration (losses, effective sample size, largest
                   weight, KL estimate, constraint, expert mass, weight by behaviour,
                   discriminator accuracy, seconds); the expert and behaviour labels are the
                   dataset's withheld columns, read for these diagnostics only
  losses.png, ess.png, kl.png
  checkpoint.npz   written atomically every --checkpoint-every iterations and on Ctrl-C
  checks.jsonl     the policy of every periodic and the final checkpoint, judged by
                   --check-rollouts rollouts through the runtime core in the simulator, in
                   the world the data were collected in (mean return of the task's reward;
                   rollout seed 7, not eval's 1)
  best-checkpoint.npz  the best-judged checkpoint; checks.png the scores over the iterations
  bank.npz         the exported skill bank (one latent, "smodice-expert") of the best-judged
                   checkpoint (of the last with --check-rollouts 0), unless --bank says where

Why judge: the policy's rollouts are not monotone in the iterations. On the paper-scale
locomotion set one run walked at iteration 600 (return 858 over 20 s) and stood at 1000 with
its losses still falling; a second stood up to 250 and walked from 300 on. A judge is only as
sure as its rollouts: a navigation policy whose goal rate 10 rollouts put at 60% reached the
goal in 40% of 30 fresh ones, so navigation checks run 30 rollouts and locomotion's, whose
returns vary little, 10 (raise --check-rollouts where rollouts vary). The judged choice
is that of an uninterrupted run: a run resumed from a checkpoint an interruption left
unjudged judges it first (a run extended with --resume --iters past its earlier end keeps
the check of that end, which a straight run would not have made).

Each iteration takes --value-steps steps on V, one pass over the whole offline set for the
weights (about 1.6 us per transition on two cores: 2 s on the paper-scale locomotion set) and
--policy-steps steps on the policy. On large sets, several steps per iteration spread the
cost of that pass; the policy needs enough steps in total to clone the weighted actions
(thousands, not hundreds). --refresh-rows N re-evaluates V on one block of N rows per pass,
in turn, and reuses the other rows' values from earlier iterations, as train dualforce does
by default (its --help says what that saves and costs). Here the default, -1, is the task's:
locomotion 0, every row every iteration, the pass its reported results were trained with;
navigation 131072, what every navigation SMODICE-expert reported was trained with (2000
iterations in about 32 minutes on two cores; the exact pass would take about 2.8 hours).

The policy's Adam rate and the moving average of its parameters that the bank deploys
(--policy-lr, --policy-average) default to -1, the task's: locomotion 1e-3 and 0.99 (ours, every
method's default), navigation 3e-4 and the last iterate (below). 1e-3 and averaging replaced
the 3e-4 and last iterate the runs before them used: at 3e-4 the policies were still
undertrained after the few thousand steps they get. A clone of the navigation expert after
5,000 steps reached the goal in 73% of 30 rollouts and stopped a median 0.14 m from it (at
1e-3: 100%, 0.02 m); a clone of the high locomotion gait stood (return 59 against 824 at
1e-3). Not every result improved: the navigation SMODICE-expert's judged checkpoint (seed 1,
1000 iterations) reached the goal in 47% of 30 rollouts, against 87% at 3e-4, though its
checks' goal rates were higher on average (74% against 58% over iterations 300-1000): its
10-rollout checks (navigation's then; 30 since) chose iteration 600, at 64% of 100 rollouts,
over iteration 1000 at 70% (the 3e-4 run's choice: 82%). With its weights capped (below), seed 2
of the navigation SMODICE-expert reached the goal in 18 of 30 rollouts (2 fell) with these
defaults and in 23 of 30 (none fell) at 3e-4 and the last iterate, navigation's defaults
since. A run started before 1e-3 and averaging were the defaults resumes with --policy-lr 3e-4
--policy-average 0; a navigation run started after that and before navigation's own
defaults, with --policy-lr 0.001 --policy-average 0.99.

--min-ess-share S caps every transition's TD residual at its value at the top share S of the
offline set before the whole-set softmax (ours; every method): no transition then carries more
than 1/(S N) of the weight, and the effective sample size is at least S N. The default, -1, is
the task's: navigation 0.01, locomotion 0 (the paper's softmax, which its reported results
were trained with). On the paper-scale navigation set the softmax's weights fell onto a handful
of transitions again and again (seed 1: an ESS under 2 in 9 of the 12 stretches of 100
iterations after the 800th, one transition holding up to 84% of the weight) and the judged
policy reached the goal in 26 of 30 rollouts (2 fell) with seed 1 and 8 of 30 with seed 2;
capped at 0.01, in 27 and 23 of 30, none falling, and seed 3 in 22 of 30, 1 falling (all with
navigation's defaults of today; eval --obs-clip 5). A navigation run started before this
default resumes with --min-ess-share 0 (and one started before the block pass was
navigation's with --refresh-rows 0).

--policy-components K (default 1) makes the policy a mixture of K Gaussians (every method; the
bank records the head and the robot deploys the mean of the most probable component). A single
Gaussian fitted to weights on routes round both sides of an obstacle fits their mean, straight
into it; a mixture can keep them apart. Measured on navigation with the box at 0.10 m (1000
iterations, train dualforce with 3 components and these defaults): seed 1's latents reached the
goal in up to 97% of 30 rollouts with no falls, where single Gaussians' best was 40%, but every
skill went round the right of the box, so none got past a fence on the right; seed 2's skills
went both ways, reaching the goal in at most 80% (docs/results.md has the numbers). The default
stays 1 until a mixture keeps the skills' routes apart and reaches the goal.

--policy-tilt K (default 0, the paper's weighted cloning) draws the policy's transitions with
probability proportional to w exp(K r_E) instead of the weights w (every training method; ours).
The weights say which transitions a skill's state-action distribution holds, not which action
it takes where the offline behaviours overlap: on the navigation set that starts in a region
(docs/results.md) the SMODICE-expert's weights near the goal lay as much on behaviours that stop
or wander beside it as on the expert's, and its policy stopped beside the goal. With K 2 the
SMODICE-expert (navigation's defaults, 2000 iterations) reached the goal in 90% of 30 rollouts
(seed 1, return 286; an earlier build drawing the same way gave 80% and, seed 2, 90%) against
77% and 77% untilted, return 211. In Dual-Force (the same set, seeds 1 and 2, 1200 iterations,
--policy-lr 0.0003 --policy-average 0) every evaluated latent then passed the filter (against
9 and 2 of 15) and the mean latent reached the goal in 60 and 59% (34 and 14% untilted), the
best in 73 and 77% (80 and 60%), but falls rose (the draws moved onto the route over the box,
which the discriminator rates highest), and switching with one side fenced reached the goal in
46% on average over the two seeds (35% untilted; docs/results.md). The default stays 0.

--policy-temperature T (default 1, the paper's weighted cloning) draws the policy's transitions
with probability proportional to w^(1/T) (every training method; ours): for the DICE weights
softmax(delta), softmax(delta / T), the temperature of advantage-weighted regression. Below 1 it
sharpens what the weights prefer where the offline behaviours overlap, such as the route a
skill's weights lean to round an obstacle, and draws from fewer transitions.

Every input is checked before training starts (NaN or Inf, shapes, an empty expert set, a
dataset whose layout is not the task's). --resume continues a run from DIR's checkpoint and
ends with the same weights, bit for bit, as an uninterrupted run; only --iters,
--checkpoint-every and --check-rollouts may change between the two (a run started before falls
were absorbing by default resumes with --absorbing-falls=false).
`

// trainingFlags are the flags every training method takes: the data, the run directory, the
// bank, and the budget of the shared learners.
type trainingFlags struct {
	offline, expert, out, task, bank                        *string
	iters, discSteps, batch, valueSteps, policySteps, every *int
	seed                                                    *uint64
	policy                                                  *policyFlags
	pass                                                    *weightPassFlags
	quiet, absorbingFalls                                   *bool
}

// trainerQuietUsage is every trainer's --quiet: it silences announceReading too.
const trainerQuietUsage = "no progress output (the progress bar, the line saying what is read)"

// announceReading tells a user who waits what the wait is for: a trainer reads and prepares
// its data set, and builds its networks, before its first output (about 1.5 minutes for the
// paper-scale navigation set on two quiet cores), unless it was asked to be quiet.
func announceReading(w io.Writer, quiet bool, offline string) {
	if !quiet {
		fmt.Fprintf(w, "reading %s and preparing the run (a paper-scale set takes a minute or two)\n", offline)
	}
}

// addTrainingFlags defines the training flags on fs with the method's defaults.
func addTrainingFlags(fs *flag.FlagSet, run trainrun.Settings, discSteps int, value dice.ValueConfig, valueSteps, policySteps int, policy wbc.Config, seed uint64, byTask bool) *trainingFlags {
	return &trainingFlags{
		offline:        fs.String("offline", "", "offline dataset archive (required)"),
		expert:         fs.String("expert", "", "expert dataset archive (default: the offline file's <name>_expert.npz)"),
		out:            fs.String("out", "", "run directory (required)"),
		task:           fs.String("task", "", "task the data must be for: locomotion or navigation (default: the dataset's)"),
		bank:           fs.String("bank", "", "bank to write at the end (default <out>/bank.npz)"),
		iters:          fs.Int("iters", run.Iterations, "iterations"),
		discSteps:      fs.Int("disc-steps", discSteps, "discriminator training steps"),
		batch:          fs.Int("batch", value.Batch, "DICE batch (transitions per value and policy step)"),
		valueSteps:     fs.Int("value-steps", valueSteps, "value steps per iteration (per skill)"),
		policySteps:    fs.Int("policy-steps", policySteps, "policy steps per iteration (per skill)"),
		policy:         addPolicyFlags(fs, policy, byTask).withDraws(fs),
		every:          fs.Int("checkpoint-every", run.CheckpointEvery, "iterations between checkpoints"),
		seed:           fs.Uint64("seed", seed, "seed of every random choice"),
		quiet:          fs.Bool("quiet", false, trainerQuietUsage),
		absorbingFalls: fs.Bool("absorbing-falls", value.AbsorbingFalls, absorbingFallsUsage),
		pass:           addWeightPassFlags(fs, value, byTask),
	}
}

// weightPassFlags are the whole-set weight pass's settings (dice.ValueConfig.RefreshRows and
// MinESSShare), with a method's defaults.
type weightPassFlags struct {
	refreshRows *int
	minESSShare *float64
	// byTask lets both be -1, the task's (prep.Task.Expert): the SMODICE-expert's defaults.
	byTask bool
}

// byTaskUsage is a usage's note on -1, listing each task's SMODICE-expert default as value shows it.
func byTaskUsage(value func(prep.ExpertDefaults) string) string {
	return "-1: the task's, " + perTask(func(t prep.Task) string { return value(t.Expert) })
}

// addWeightPassFlags defines --refresh-rows and --min-ess-share with def's values, or with -1
// (the task's) when byTask is set.
func addWeightPassFlags(fs *flag.FlagSet, def dice.ValueConfig, byTask bool) *weightPassFlags {
	rows, rowsUsage := def.RefreshRows, "rows whose V each iteration's weight pass re-evaluates, in turn (0: every row"
	share, shareUsage := def.MinESSShare, "cap each transition's TD residual at its value at this top share of the offline set before the softmax, "+
		"so that the weights' effective sample size is at least that share of the set (ours; 0: the paper's softmax"
	if byTask {
		rows, rowsUsage = -1, rowsUsage+"; "+byTaskUsage(func(e prep.ExpertDefaults) string { return strconv.Itoa(e.RefreshRows) })
		share, shareUsage = -1, shareUsage+"; "+byTaskUsage(func(e prep.ExpertDefaults) string { return fmt.Sprintf("%g", e.MinESSShare) })
	}
	return &weightPassFlags{
		refreshRows: fs.Int("refresh-rows", rows, rowsUsage+")"),
		minESSShare: fs.Float64("min-ess-share", share, shareUsage+")"),
		byTask:      byTask,
	}
}

func (f *weightPassFlags) check() error {
	rowsByTask, shareByTask := f.byTask && *f.refreshRows == -1, f.byTask && *f.minESSShare == -1
	switch {
	case !rowsByTask && *f.refreshRows < 0:
		return usagef("--refresh-rows %d: want a count >= 0%s", *f.refreshRows, orTheTask(f.byTask))
	case !shareByTask && !(*f.minESSShare >= 0 && *f.minESSShare <= 1):
		return usagef("--min-ess-share %v: want a share in [0, 1]%s", *f.minESSShare, orTheTask(f.byTask))
	}
	return nil
}

// orTheTask ends a refusal of a flag that may be -1, the task's, when byTask is set.
func orTheTask(byTask bool) string {
	if byTask {
		return " or -1 (the task's)"
	}
	return ""
}

// apply sets v's weight pass to the flags' for a run on task's data.
func (f *weightPassFlags) apply(v *dice.ValueConfig, task string) {
	expert := prep.Tasks[task].Expert
	v.RefreshRows, v.MinESSShare = *f.refreshRows, *f.minESSShare
	if *f.refreshRows == -1 {
		v.RefreshRows = expert.RefreshRows
	}
	if *f.minESSShare == -1 {
		v.MinESSShare = expert.MinESSShare
	}
}

// applyLearners sets the value and policy learners' batch, falls and weight pass to the flags'
// for a run on task's data.
func (f *trainingFlags) applyLearners(v *dice.ValueConfig, p *wbc.Config, task string) {
	applyLearners(v, p, *f.batch, *f.absorbingFalls, f.pass, f.policy, task)
}

// applyLearners sets the flags every method's value and policy learners share (train
// dualforce's too, which defines them beside its own) for a run on task's data.
func applyLearners(v *dice.ValueConfig, p *wbc.Config, batch int, absorbingFalls bool, pass *weightPassFlags, policy *policyFlags, task string) {
	v.Batch, v.InitBatch, p.Batch = batch, batch, batch
	v.AbsorbingFalls = absorbingFalls
	pass.apply(v, task)
	policy.apply(p, task)
}

// policyFlags are the policy learner's Adam rate, parameter averaging and mixture head
// (wbc.Config.LR, Average, Components), with a method's defaults.
type policyFlags struct {
	lr, average *float64
	components  *int
	// tilt and temperature are --policy-tilt and --policy-temperature (wbc.Config.Tilt and
	// Temperature), nil for fit bc, whose draws are uniform.
	tilt, temperature *float64
	// byTask lets the rate and averaging be -1, the task's (prep.Task.Expert, or def's where
	// the task keeps the learner's): the SMODICE-expert's defaults.
	byTask bool
	def    wbc.Config
}

// addPolicyFlags defines the policy flags with def's values, or with -1 (the task's) for the
// rate and averaging when byTask is set.
func addPolicyFlags(fs *flag.FlagSet, def wbc.Config, byTask bool) *policyFlags {
	lr, lrUsage := def.LR, "the policy's Adam learning rate"
	average, averageUsage := def.Average, "decay per policy step of the moving average of the policy's parameters that the bank deploys "+
		"(Polyak-Ruppert averaging of the iterates; 0: the last iterate"
	if byTask {
		lr, lrUsage = -1, lrUsage+" ("+byTaskUsage(func(e prep.ExpertDefaults) string { return fmt.Sprintf("%g", taskPolicy(e, def).LR) })+")"
		average, averageUsage = -1, averageUsage+"; "+byTaskUsage(func(e prep.ExpertDefaults) string { return fmt.Sprintf("%g", taskPolicy(e, def).Average) })
	}
	return &policyFlags{
		lr:      fs.Float64("policy-lr", lr, lrUsage),
		average: fs.Float64("policy-average", average, averageUsage+")"),
		components: fs.Int("policy-components", max(1, def.Components), fmt.Sprintf("Gaussians in the policy head's mixture (1..%d; 1: a single Gaussian); the deployed action is "+
			"the most probable component's mean, so a clone of routes round both sides of an obstacle can keep them apart instead of fitting their mean", skills.MaxComponents)),
		byTask: byTask,
		def:    def,
	}
}

// policyTiltUsage is --policy-tilt's text (wbc.Config.Tilt).
const policyTiltUsage = "draw the policy's transitions with probability proportional to w exp(k r_E) instead of the weights w, tilting the weighted cloning towards transitions of high imitation reward (ours; 0: the paper's weighted cloning)"

// policyTemperatureUsage is --policy-temperature's text (wbc.Config.Temperature).
const policyTemperatureUsage = "draw the policy's transitions with probability proportional to w^(1/T) instead of the weights w: for the DICE weights softmax(delta), softmax(delta / T), sharper below 1, as the temperature of advantage-weighted regression (ours; 1: the paper's weighted cloning)"

// withDraws defines --policy-tilt and --policy-temperature beside the policy flags: the
// training methods', which draw the policy's transitions by their weights (and tilt them by
// their imitation reward r_E).
func (p *policyFlags) withDraws(fs *flag.FlagSet) *policyFlags {
	p.tilt = fs.Float64("policy-tilt", p.def.Tilt, policyTiltUsage)
	p.temperature = fs.Float64("policy-temperature", 1, policyTemperatureUsage)
	return p
}

// taskPolicy is the rate and averaging a task's SMODICE-expert defaults to: the task's, or
// def's where the task keeps the learner's.
func taskPolicy(e prep.ExpertDefaults, def wbc.Config) wbc.Config {
	if e.PolicyLR > 0 {
		def.LR, def.Average = e.PolicyLR, e.PolicyAverage
	}
	return def
}

func (p *policyFlags) check() error {
	lrByTask, averageByTask := p.byTask && *p.lr == -1, p.byTask && *p.average == -1
	switch {
	case !averageByTask && !(*p.average >= 0 && *p.average < 1):
		return usagef("--policy-average %v: want a decay in [0, 1)%s", *p.average, orTheTask(p.byTask))
	case !lrByTask && (!(*p.lr > 0) || math.IsInf(*p.lr, 1)):
		return usagef("--policy-lr %v: want a positive learning rate%s", *p.lr, orTheTask(p.byTask))
	case *p.components < 1 || *p.components > skills.MaxComponents:
		return usagef("--policy-components %d: want 1..%d", *p.components, skills.MaxComponents)
	case p.tilt != nil && (!(*p.tilt >= 0) || math.IsInf(*p.tilt, 1)):
		return usagef("--policy-tilt %v: want a finite tilt >= 0", *p.tilt)
	case p.temperature != nil && (!(*p.temperature > 0) || math.IsInf(*p.temperature, 1)):
		return usagef("--policy-temperature %v: want a finite temperature > 0", *p.temperature)
	}
	return nil
}

// apply sets c's rate, averaging and mixture to the flags' for a run on task's data. One
// component is stored as 0, the zero value, so that the configurations (and checkpoints) of
// single-Gaussian runs are those written before the mixture head existed, and such runs resume.
func (p *policyFlags) apply(c *wbc.Config, task string) {
	c.LR, c.Average, c.Components = *p.lr, *p.average, 0
	if p.byTask {
		own := taskPolicy(prep.Tasks[task].Expert, p.def)
		if *p.lr == -1 {
			c.LR = own.LR
		}
		if *p.average == -1 {
			c.Average = own.Average
		}
	}
	if *p.components > 1 {
		c.Components = *p.components
	}
	if p.tilt != nil {
		c.Tilt = *p.tilt
	}
	// 1 is stored as 0, the zero value, as one component is: runs at the paper's draws keep
	// the configurations (and checkpoints) written before the temperature existed.
	if p.temperature != nil {
		c.Temperature = 0
		if *p.temperature != 1 {
			c.Temperature = *p.temperature
		}
	}
}

// absorbingFallsUsage is the --absorbing-falls flag's text (dice.ValueConfig.AbsorbingFalls).
const absorbingFallsUsage = "a fall's next state is absorbing at the set's lowest reward, worth min R/(1-gamma), instead of 0 (ours: with the spec's 0 the weights collapsed onto falls on the paper-scale locomotion set)"

// check refuses unusable values and fills in the default expert archive and bank path.
func (f *trainingFlags) check() error {
	switch {
	case *f.offline == "" || *f.out == "":
		return usagef("--offline and --out are required")
	case *f.iters < 0 || *f.discSteps < 0 || *f.valueSteps < 0 || *f.policySteps < 0 || *f.batch <= 0 || *f.every <= 0:
		return usagef("--iters %d, --disc-steps %d, --value-steps %d, --policy-steps %d, --batch %d, --checkpoint-every %d: want non-negative counts and a positive batch and period",
			*f.iters, *f.discSteps, *f.valueSteps, *f.policySteps, *f.batch, *f.every)
	}
	if err := f.policy.check(); err != nil {
		return err
	}
	if err := f.pass.check(); err != nil {
		return err
	}
	if *f.expert == "" {
		*f.expert = datafile.ExpertPath(*f.offline)
	}
	if *f.bank == "" {
		*f.bank = filepath.Join(*f.out, "bank.npz")
	}
	if err := checkOutputFiles(*f.bank); err != nil {
		return err
	}
	return checkOutputDir(*f.out)
}

// settings are the run settings the flags give.
func (f *trainingFlags) settings() trainrun.Settings {
	return trainrun.Settings{Iterations: *f.iters, CheckpointEvery: *f.every}
}

// load reads and prepares the data and says what was read.
func (f *trainingFlags) load(stdout, stderr io.Writer) (*prep.Data, error) {
	announceReading(stderr, *f.quiet, *f.offline)
	data, err := loadTrainingData(*f.task, *f.offline, *f.expert)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "data: %d offline transitions, %d expert states, task %s, layout %s\n",
		data.Offline.Len(), len(data.Expert)/data.Offline.ObsDim, data.Task, data.Contract.Layout.Name)
	return data, nil
}

func runTrainSMODICE(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := smodice.DefaultConfig()
	fs := newFlagSet("train smodice", trainSMODICEUsage, stderr)
	tf := addTrainingFlags(fs, def.Run, def.DiscSteps, def.Value, def.ValueSteps, def.PolicySteps, def.Policy, def.Seed, true)
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint")
	checkRollouts := fs.Int("check-rollouts", -1, checkRolloutsUsage("each checkpoint's policy; the bank is the best-judged one"))
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	if err := checkCheckRollouts(*checkRollouts); err != nil {
		return err
	}
	cfg := def
	cfg.Run, cfg.DiscSteps, cfg.Seed = tf.settings(), *tf.discSteps, *tf.seed
	cfg.ValueSteps, cfg.PolicySteps = *tf.valueSteps, *tf.policySteps
	data, err := tf.load(stdout, stderr)
	if err != nil {
		return err
	}
	tf.applyLearners(&cfg.Value, &cfg.Policy, data.Task)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	opt := trainrun.Options{Dir: *tf.out, Resume: *resume, Progress: stderr, Quiet: *tf.quiet, Logger: log}
	checker, err := newChecker(data, *checkRollouts)
	if err != nil {
		return err
	}
	if checker != nil {
		opt.Judge = smodice.Judge(checker)
	}
	start := time.Now()
	var last *smodice.Record
	observe := func(r smodice.Record) { last = &r }
	ck, err := smodice.Train(ctx, data, cfg, smodice.Options{Options: opt, Observe: observe})
	if ck != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdout, "interrupted after iteration %d; checkpoint in %s (continue with --resume)\n", ck.Iteration, *tf.out)
	}
	if err != nil {
		return explainRunExists(err)
	}
	printRun(stdout, ck, time.Since(start))
	if last != nil && data.Behaviours != nil {
		printBehaviourMass(stdout, data.Behaviours, last)
	}
	if opt.Judge != nil {
		if ck, err = selectedCheckpoint(stdout, *tf.out, ck); err != nil {
			return err
		}
	}
	return exportBank(stdout, ck, *tf.bank)
}

// checkRolloutsUsage is the --check-rollouts flag's text, judged is what the checks judge.
func checkRolloutsUsage(judged string) string {
	var parts []string
	for _, task := range slices.Sorted(maps.Keys(eval.TaskCheckRollouts)) {
		parts = append(parts, fmt.Sprintf("%s %d", task, eval.TaskCheckRollouts[task]))
	}
	return "rollouts in the simulator judging " + judged + " (-1: the task's, " + strings.Join(parts, ", ") +
		"; 0: no checks, the bank is the last iteration's)"
}

// checkCheckRollouts refuses a --check-rollouts value that is neither a count nor -1.
func checkCheckRollouts(n int) error {
	if n < -1 {
		return usagef("--check-rollouts %d: want -1 (the task's), 0 (no checks) or more", n)
	}
	return nil
}

// newChecker is the judge of a run's checkpoints by rollouts rollouts of its task (nil for
// none, the task's number for -1), refused at once when it cannot run the data's banks.
func newChecker(data *prep.Data, rollouts int) (*eval.Checker, error) {
	if rollouts == 0 {
		return nil, nil
	}
	checker, err := eval.NewChecker(data.Task, data.World, rollouts)
	if err == nil {
		err = checker.Accepts(&data.Contract)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints cannot be judged (--check-rollouts 0 trains without): %w", err)
	}
	return &checker, nil
}

// selectedCheckpoint reads the best-judged checkpoint of the run in dir after saying which
// it is (reportChecks); a run that judged nothing with a score keeps its last checkpoint,
// last.
func selectedCheckpoint(w io.Writer, dir string, last *smodice.Checkpoint) (*smodice.Checkpoint, error) {
	judged, err := reportChecks(w, dir, last.Iteration)
	if !judged || err != nil {
		return last, err
	}
	f, _, err := trainrun.BestCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	return smodice.FromFile(f)
}

// reportChecks says which checkpoint of the run in dir was judged best and how it compares
// with the last one judged, or that nothing was judged with a score (the bank is then that
// of the last iteration, lastIteration).
func reportChecks(w io.Writer, dir string, lastIteration int) (judged bool, err error) {
	checks, err := trainrun.ReadChecks(dir)
	if err != nil {
		return false, err
	}
	best, err := trainrun.Selected(dir)
	if errors.Is(err, trainrun.ErrNoChecks) {
		fmt.Fprintf(w, "checks: %d, none with a score to choose by (nothing after iteration 0 to judge, or only NaN); the bank is iteration %d's\n", len(checks), lastIteration)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	final := checks[len(checks)-1]
	fmt.Fprintf(w, "checks: %d; best iteration %d (%s); last iteration %d (%s)\n",
		len(checks), best.Iteration, best.Summary, final.Iteration, final.Summary)
	if len(final.Parts) > 0 {
		var its []string
		for p := range final.Parts {
			if c, ok := trainrun.BestOfPart(checks, p); ok {
				its = append(its, fmt.Sprintf("%d (%.1f)", c.Iteration, c.Parts[p]))
			} else {
				its = append(its, "none")
			}
		}
		fmt.Fprintf(w, "each skill's best iteration (score): %s\n", strings.Join(its, ", "))
	}
	return true, nil
}

// loadTrainingData reads both archives and prepares them, checking
// everything before any training.
func loadTrainingData(task, offline, expert string) (*prep.Data, error) {
	off, err := datafile.ReadOffline(offline)
	if err != nil {
		return nil, err
	}
	exp, err := datafile.ReadExpert(expert)
	if err != nil {
		return nil, err
	}
	in, err := prep.FromFiles(task, off, exp)
	if err != nil {
		return nil, err
	}
	return prep.Prepare(in)
}

func printRun(w io.Writer, ck *smodice.Checkpoint, elapsed time.Duration) {
	r := ck.Disc
	fmt.Fprintf(w, "discriminator: held-out accuracy %.3f (expert %.3f, offline %.3f), logits [%.2f, %.2f], %.1f%% clipped\n",
		r.HeldOutAccuracy, r.HeldOutExpertAccuracy, r.HeldOutOfflineAccuracy, r.LogitMin, r.LogitMax, 100*r.ClippedFraction)
	e := ck.Estimate
	fmt.Fprintf(w, "iteration %d: ESS %.0f, max w %.3g, KL %.3f, constraint %.3f, expert mass %.3f (%v this session)\n",
		ck.Iteration, e.Weights.ESS, e.Weights.Max, e.Weights.KL, e.Constraint, e.ExpertMass, elapsed.Round(time.Millisecond))
}

// printBehaviourMass lists where the last iteration's weights went, by the behaviours the
// dataset withholds from training, heaviest first, each with its share of the transitions.
func printBehaviourMass(w io.Writer, b *prep.Behaviours, r *smodice.Record) {
	share := b.Share()
	order := make([]int, len(b.Names))
	for k := range order {
		order[k] = k
	}
	mass := func(k int) float64 { return float64(r.BehaviourMass[b.Names[k]]) }
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(mass(y), mass(x)) })
	fmt.Fprint(w, "weight by behaviour (withheld labels; share of the transitions in brackets):")
	for _, k := range order {
		fmt.Fprintf(w, " %s %.3f (%.3f)", b.Names[k], mass(k), share[k])
	}
	fmt.Fprintln(w)
}

func exportBank(w io.Writer, ck *smodice.Checkpoint, path string) error {
	bank, err := ck.Bank()
	if err != nil {
		return err
	}
	if err := saveBank(path, bank); err != nil {
		return err
	}
	fmt.Fprintf(w, "bank: %s (latent %q, iteration %d)\n", path, smodice.ExpertLatentName, ck.Iteration)
	return nil
}
