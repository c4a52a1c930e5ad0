package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/dataset"
	dfloop "github.com/dualforce/dualforce/trainer/dualforce"
	"github.com/dualforce/dualforce/trainer/fre"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	trainrun "github.com/dualforce/dualforce/trainer/run"
)

var trainDualForceUsage = `Usage: dualforce train dualforce --offline FILE --smodice DIR --fre DIR --out DIR [flags]

Trains --skills skills with Dual-Force (the paper's Algorithm 1): each skill has its own value
function, policy and weights over the whole offline set, held to the expert by a bounded
Lagrange multiplier on the imitation constraint phi_i <= --eps (r_E from the discriminator of
the SMODICE run in --smodice) and pushed apart by the Van der Waals reward on the successor
features (of phi onto --features) at distance scale --l0. Every reward a skill is trained under
is encoded by the frozen FRE encoder of the run in --fre into a latent z_i^k (the mean over
--subsets subsets of the FRE run's token count of offline states). Writes into DIR:
  metrics.jsonl    one JSON line per iteration (VdW objective, mean minimum distance, and per
                   skill the constraint phi, sigmoid(mu), distance to and index of the
                   nearest skill, ESS, largest weight, value and policy losses, its weight
                   on each behaviour of the set, mass_<behaviour>_<skill>, when the set
                   labels them (a diagnostic: the learners never see the labels), and every
                   100 iterations the weight pass's error stale_tv; seconds)
  dualforce.png    the constraints against eps, the VdW objective, the mean minimum distance
  dualforce_weights.png  each skill's sigmoid(mu) and effective sample size
  dualforce_behaviours.png  when the set labels its behaviours: each skill's weight on the six
                   behaviours it weighs most, over the iterations
  checkpoint.npz   written atomically every --checkpoint-every iterations and on Ctrl-C
  checks.jsonl     every periodic and the final checkpoint judged by --check-rollouts
                   rollouts of each skill's policy on its latest latent, through the runtime
                   core in the simulator (each skill's mean return, and their mean; as train
                   smodice); checks.png the scores over the iterations
  best-checkpoint-part<i>.npz  the checkpoint skill i was judged best in (best-checkpoint.npz:
                   the best mean)
  bank.npz         the skill bank (written atomically), unless --bank says where: one slot per
                   skill, its policy of the iteration it was judged best at (of the last with
                   --check-rollouts 0), every latent it met up to then with its iteration,
                   sigmoid(mu), phi and offline psi, and the FRE encoder with its anchors

Why judge (ours): as the SMODICE-expert's, the skills' rollouts are not monotone in the
iterations, and a run's last policies are not its best. The paper-scale locomotion run
without checks ended with one of its three skills standing at every latent it had met. A
skill's latents after its best iteration are left out of the bank: its policy there never
saw them.

Each iteration's weights cover the whole offline set. On sets of more than --refresh-rows
transitions the pass re-evaluates V on one block of that many rows in turn and reuses the
other rows' values from earlier iterations (ours; on the paper-scale locomotion set an
iteration takes 0.75 s instead of 4.2 s on two quiet cores (BenchmarkIteration), the whole
run with its checks 28-33 minutes instead of more than 2 hours); every 100 iterations it
measures the total variation distance between those weights and exact ones (stale_tv in
metrics.jsonl; 0.02-0.83, median 0.10, in the runs of seeds 1 and 2 with the default flags).
--refresh-rows 0 evaluates every row every iteration.

Falls are absorbing by default, as in train smodice (--absorbing-falls=false for the spec's
terminal value of 0; train smodice --help says why).

Rehearsal (ours): the bank keeps every latent a skill met, but a policy fitted only to each
iteration's latent forgets what the older ones meant, and stands on them. So each iteration
also takes --rehearsal-steps policy steps on earlier latents of the skill, each with a sample
of --rehearsal-rows rows of the weights of its iteration; up to --rehearsal-keep earlier
iterations are kept, spread evenly over the run, and taken in turn. On the 125,000-transition
locomotion set (seed 1, 1,000 iterations) 18 of 30 evaluated latents passed the filter with
the default 3 steps, 4 of 30 with --rehearsal-steps 0 (the paper's policy update).

--l0 and --eps default to the task's values (` + perTask(func(t prep.Task) string { return fmt.Sprintf("%g and %g", t.L0, t.Eps) }) + `);
--policy-lr, --policy-average, --policy-components, --policy-tilt and --policy-temperature are
train smodice's, with every method's defaults (1e-3, 0.99, 1, 0, 1) whatever the task (train smodice --help says why, and why navigation's
SMODICE-expert defaults to 3e-4 and the last iterate).
--features (ours) projects phi onto other fields of the observation than the task's (the spec's
joint_pos for locomotion, base velocities for navigation), or onto one value of a field
(target[1], the goal's sideways position), standardised over the offline set. The FRE run
keeps the features it was trained with: its states are rebuilt with its own phi, so one FRE
run serves runs of any --features. On the paper-scale navigation set, the goal's
position (target) added to the velocities puts the expert's routes 1.0-1.5 apart in phi instead
of 0.3-0.4, yet over whole episodes the skills' weights still did not choose a route
(docs/results.md, "What the skills' weights hold"): the skills part along phi's widest
direction, which is not the routes'. The goal's sideways position alone, listed four times
(--features target[1],target[1],target[1],target[1] --l0 3) with --min-ess-share 0.01, gave
one skill per route, walking badly in 300 iterations (docs/results.md, "where the diversity
force pushes"); continued to 1200 iterations with checks the split held, the skills reached the
goal in at most 73%, and switching from the right skill got 73 / 73 / 43 / 7% (no fence / left
/ right / both fenced). Listed twice beside the cosine of the heading error five times
(target[1],target[1],target[3],target[3],target[3],target[3],target[3] --l0 2.1), one skill
keeps the way over the box (up to 83% of rollouts at the goal) and the other two the right;
from that skill, switching on, the goal in 57% and 50% with the left or the right side fenced.
--mu-kp adds a proportional term to the multipliers (ours, off by default): the imitation
share becomes sigmoid(mu_i + kp (phi_i - eps)), so a violated constraint raises it at once.
--min-ess-share S caps each skill's TD residuals at their top share S before the softmax, as
for train smodice (its --help says why; ours, off by default here). On the paper-scale
navigation set (seed 1, 1200 iterations, the shipped recipe's flags) the cap 0.01 kept every
skill's effective sample size above 345,000, but the constraint then stayed near eps and the
multipliers at their floor (sigmoid(mu) 0.05-0.09): the skills followed the diversity reward,
reached the goal in at most 43% of 30 rollouts, and switching got 37 / 43 / 37 / 23% (open,
fence left, fence right, both) against the shipped bank's 87 / 83 / 50 / 60% (then). With
--eps 0.3, 0.5 or 0.7 as well the skills imitated more or kept routes apart, but none got
through after a switch (docs/results.md, "the imitation constraint").

Every input is checked before the run directory is touched (NaN or Inf, a dataset whose
layout is not the task's, a SMODICE or FRE run of another dataset). The SMODICE and FRE runs
must have been trained on the same --offline file; give --fre-pool if the FRE run was
trained with a --pool other than the default. --resume continues a run from DIR's
checkpoint and ends with the same bank, bit for bit, as an uninterrupted run; only --iters,
--checkpoint-every and --check-rollouts may change between the two.
`

// perTask lists value for every task by name: "locomotion ..., navigation ...".
func perTask(value func(prep.Task) string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(prep.Tasks)) {
		parts = append(parts, name+" "+value(prep.Tasks[name]))
	}
	return strings.Join(parts, ", ")
}

func runTrainDualForce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def, err := dfloop.DefaultTrainConfig(prep.TaskLocomotion)
	if err != nil {
		return err
	}
	fs := newFlagSet("train dualforce", trainDualForceUsage, stderr)
	offline := fs.String("offline", "", "offline dataset archive (required)")
	smodiceRun := fs.String("smodice", "", "SMODICE run directory (or its checkpoint file) whose discriminator gives r_E (required)")
	freRun := fs.String("fre", "", "FRE run directory (or its checkpoint file): the frozen reward encoder (required)")
	out := fs.String("out", "", "run directory (required)")
	task := fs.String("task", "", "task the data must be for: locomotion or navigation (default: the dataset's)")
	features := featuresFlag(fs)
	nSkills := fs.Int("skills", def.Skills, "number of skills n (at least 2)")
	l0 := fs.Float64("l0", 0, "VdW distance scale l0 (default: the task's)")
	eps := fs.Float64("eps", 0, "imitation-constraint bound eps (default: the task's)")
	absorbingFalls := fs.Bool("absorbing-falls", def.Value.AbsorbingFalls, absorbingFallsUsage)
	betaClip := fs.Float64("beta-clip", 0, "clip each skill's VdW reward to its mean +- this many standard deviations over the offline set (ours, an experiment; 0: the paper's reward)")
	muKP := fs.Float64("mu-kp", 0, "proportional gain on the constraint violation added to each multiplier (0: the paper's multiplier)")
	iters := fs.Int("iters", def.Run.Iterations, "outer iterations")
	batch := fs.Int("batch", def.Value.Batch, "transitions per value and policy step")
	valueSteps := fs.Int("value-steps", def.Loop.ValueSteps, "value steps per skill and outer iteration")
	policySteps := fs.Int("policy-steps", def.Loop.PolicySteps, "policy steps per skill and outer iteration")
	rehearsalSteps := fs.Int("rehearsal-steps", def.Loop.RehearsalSteps, "extra policy steps per skill and outer iteration on the skill's earlier latents, each with a sample of the weights of its iteration (0: the paper's policy update)")
	rehearsalRows := fs.Int("rehearsal-rows", def.Loop.RehearsalRows, "rows of an earlier iteration's weights kept for rehearsal")
	rehearsalKeep := fs.Int("rehearsal-keep", def.Loop.RehearsalKeep, "earlier iterations kept for rehearsal per skill, spread evenly over the run")
	hidden := fs.Int("hidden", def.Value.Hidden[0], "width of the value and policy networks' two hidden layers")
	policy := addPolicyFlags(fs, def.Policy, false).withDraws(fs)
	pass := addWeightPassFlags(fs, def.Value, false)
	subsets := fs.Int("subsets", 32, "subsets of offline states each latent averages over (m)")
	pool := fs.Int("fre-pool", defaultFREPool, "the --pool the FRE run was trained with")
	seed := fs.Uint64("seed", def.Seed, "seed of every random choice")
	every := fs.Int("checkpoint-every", def.Run.CheckpointEvery, "iterations between checkpoints")
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint")
	bankPath := fs.String("bank", "", "bank to write at the end (default <out>/bank.npz)")
	quiet := fs.Bool("quiet", false, trainerQuietUsage)
	checkRollouts := fs.Int("check-rollouts", -1, checkRolloutsUsage("each checkpoint's skills (each on its latest latent); the bank takes each skill from the checkpoint it was judged best in"))
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *offline == "" || *smodiceRun == "" || *freRun == "" || *out == "":
		return usagef("--offline, --smodice, --fre and --out are required")
	case *nSkills < 2 || *iters < 0 || *valueSteps < 0 || *policySteps < 0 || *batch <= 0 || *hidden <= 0 || *subsets <= 0 || *pool <= 0 || *every <= 0:
		return usagef("--skills %d, --iters %d, --value-steps %d, --policy-steps %d, --batch %d, --hidden %d, --subsets %d, --fre-pool %d, --checkpoint-every %d: want at least 2 skills, non-negative counts and positive sizes",
			*nSkills, *iters, *valueSteps, *policySteps, *batch, *hidden, *subsets, *pool, *every)
	case *rehearsalSteps < 0 || *rehearsalRows <= 0 || *rehearsalKeep <= 0:
		return usagef("--rehearsal-steps %d, --rehearsal-rows %d, --rehearsal-keep %d: want steps >= 0 and positive sizes", *rehearsalSteps, *rehearsalRows, *rehearsalKeep)
	case !(*l0 >= 0) || !(*eps >= 0):
		return usagef("--l0 %v, --eps %v: want positive values (0 for the task's)", *l0, *eps)
	case !(*muKP >= 0) || math.IsInf(*muKP, 1):
		return usagef("--mu-kp %v: want a finite gain >= 0", *muKP)
	case !(*betaClip >= 0) || math.IsInf(*betaClip, 1):
		return usagef("--beta-clip %v: want a finite number of standard deviations >= 0", *betaClip)
	}
	if err := policy.check(); err != nil {
		return err
	}
	if err := pass.check(); err != nil {
		return err
	}
	if err := checkCheckRollouts(*checkRollouts); err != nil {
		return err
	}
	if *bankPath == "" {
		*bankPath = filepath.Join(*out, "bank.npz")
	}

	announceReading(stderr, *quiet, *offline)
	data, raw, rE, err := loadOfflineWithReward(*task, *offline, *smodiceRun, features())
	if err != nil {
		return err
	}
	enc, tokens, err := loadFREEncoder(data, raw, rE, *freRun, *pool)
	if err != nil {
		return err
	}
	checker, err := newChecker(data, *checkRollouts)
	if err != nil {
		return err
	}
	dims, err := enc.Net.Dims()
	if err != nil {
		return err
	}
	cfg, err := dfloop.DefaultTrainConfig(data.Task)
	if err != nil {
		return err
	}
	cfg.Seed, cfg.Skills, cfg.Run = *seed, *nSkills, trainrun.Settings{Iterations: *iters, CheckpointEvery: *every}
	cfg.Loop.ValueSteps, cfg.Loop.PolicySteps, cfg.Loop.MuKP, cfg.Loop.BetaClip = *valueSteps, *policySteps, *muKP, *betaClip
	cfg.Loop.RehearsalSteps, cfg.Loop.RehearsalRows, cfg.Loop.RehearsalKeep = *rehearsalSteps, *rehearsalRows, *rehearsalKeep
	if *l0 > 0 {
		cfg.Loop.L0 = *l0
	}
	if *eps > 0 {
		cfg.Loop.Eps = *eps
	}
	cfg.Value.Hidden, cfg.Policy.Hidden = []int{*hidden, *hidden}, []int{*hidden, *hidden}
	applyLearners(&cfg.Value, &cfg.Policy, *batch, *absorbingFalls, pass, policy, data.Task)
	in := dfloop.TrainInputs{RE: rE, LatentDim: dims.Latent, BankFRE: enc,
		Encoder: func(_ int, rng *rand.Rand) (dfloop.Encoder, error) {
			return dfloop.NewFREEncoder(&enc.Net, data.Offline.Obs, data.Offline.ObsDim, *subsets, tokens, rng)
		}}
	fmt.Fprintf(stdout, "data: %d offline transitions, task %s, layout %s; %d skills, l0 %g, eps %g, latents of %d values\n",
		data.Offline.Len(), data.Task, data.Contract.Layout.Name, cfg.Skills, cfg.Loop.L0, cfg.Loop.Eps, in.LatentDim)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	oneBLASThread(log)
	start := time.Now()
	opt := trainrun.Options{Dir: *out, Resume: *resume, Progress: stderr, Quiet: *quiet, Logger: log}
	if checker != nil {
		opt.Judge = dfloop.Judge(checker)
	}
	bank, err := dfloop.Train(ctx, data, in, cfg, dfloop.Options{Options: opt})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdout, "interrupted; checkpoint in %s (continue with --resume)\n", *out)
	}
	if err != nil {
		return explainRunExists(err)
	}
	if checker != nil {
		if _, err := reportChecks(stdout, *out, cfg.Run.Iterations); err != nil {
			return err
		}
	}
	if err := saveBank(*bankPath, bank); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bank: %s (%d skills, %d latents, FRE encoder; %v this session)\n",
		*bankPath, len(bank.Slots), len(bank.Latents), time.Since(start).Round(time.Millisecond))
	return nil
}

// oneBLASThread gives OpenBLAS one thread per call for a trainer that runs
// its skills side by side (unless OPENBLAS_NUM_THREADS says otherwise):
// with OpenBLAS's default threads a paper-scale Dual-Force iteration took
// 2.46 s on two cores, with one 1.49 s (BenchmarkIteration).
func oneBLASThread(log *slog.Logger) {
	if nn.OneBLASThreadUnlessSet() {
		log.Info("one OpenBLAS thread per call: the skills run side by side (set OPENBLAS_NUM_THREADS to choose)")
	}
}

// errFREMismatch reports an FRE run that was not trained on the offline
// dataset and discriminator given.
var errFREMismatch = errors.New("the FRE run does not fit the offline dataset and SMODICE run")

// loadFREEncoder rebuilds the states the FRE run in path trained on (data's
// states with r_E, drawn with the run's seed, and phi onto the run's own
// feature fields, projected from the raw offline set when they are not
// data's) and exports its frozen encoder and the number of states it
// encodes a reward on at once; a run of other states or rewards is refused.
func loadFREEncoder(data *prep.Data, raw *dataset.Offline, rE []float32, path string, pool int) (*skills.FRE, int, error) {
	if filepath.Ext(path) != filepath.Ext(trainrun.CheckpointFile) {
		path = filepath.Join(path, trainrun.CheckpointFile)
	}
	cfg, contract, err := fre.ReadConfig(path)
	if err != nil {
		return nil, 0, err
	}
	if fields := contract.Features.Fields; !slices.Equal(fields, data.Contract.Features.Fields) {
		p, err := prep.Project(raw, data.Contract.Layout, fields)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s: its features: %w", errFREMismatch, path, err)
		}
		data = data.WithFeatures(p)
	}
	src, err := freSource(data, rE, pool, cfg.Seed)
	if err != nil {
		return nil, 0, err
	}
	tr, err := fre.Load(src, path)
	if errors.Is(err, trainrun.ErrResumeMismatch) {
		return nil, 0, fmt.Errorf("%w: %w (was it trained with --offline and --smodice as given here, and --pool %d?)", errFREMismatch, err, pool)
	}
	if err != nil {
		return nil, 0, err
	}
	return tr.Export(), cfg.Tokens, nil
}
