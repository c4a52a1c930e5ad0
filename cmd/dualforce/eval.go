package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/eval"
	"github.com/dualforce/dualforce/trainer/metrics"
)

func init() {
	register(command{name: "eval", summary: "evaluate a bank's skills in simulation through the runtime core", run: runEval})
}

const evalUsage = `Usage: dualforce eval --bank FILE --task locomotion|navigation [flags]

Runs every latent of the bank in MuJoCo behind the emulated master board, driven by the
runtime's own controller core in lockstep (stand up, hold, run the skill), and measures on
simulator ground truth the withheld task reward (locomotion: tracking the commanded 0.3 m/s;
navigation: progress to and reaching the goal), falls, and the online successor features of the
bank's feature projection. Rollout k of every latent sees the same world, start heading and
noise, drawn from --seed; results do not depend on --workers.

With --expert, that bank's first latent (the SMODICE-expert) is evaluated first, heads the
distance matrix, and sets the filter: latents reaching --filter times its mean return pass.

With --fences (navigation), every latent also runs in the fenced worlds (obstacle_fence_left,
obstacle_fence_right, obstacle_fenced: the way round the box blocked on one side or both) with
the same rollouts, and eval.json records its goal rate per world. They are variants of the
world evaluated in (--world, or the task's): its box and goal with the fences and layout
jitter of the built-in fenced world, so a world file with a higher box is fenced as it is.
--max-latents N evaluates an even subsample of a large bank: equal shares per skill, spread
over iterations. --latents names the latents instead: indices (3,17,40) or "best", the one
the runtime starts with (among latents an earlier evaluation measured and did not filter out,
in a navigation bank the most often at the goal over the worlds measured, else the highest
return); with --switching, the end-to-end check of the runtime on an evaluated
bank: every switch the core makes is kept in eval.json (when, where, from and to which
latent, what was blocked, why that one), as is every time a route was blocked with no
measured latent to switch to (nowhere_to_go), and the summary says how many rollouts
switched, how those ended, and how many had nowhere to go.

Every rollout is also described on ground truth: mean base height, forward, lateral and yaw
velocity, time to the goal, the route past the box. A locomotion latent is tagged low, middle or
high by its mean base height; a navigation latent evaluated in the task's own world (obstacle)
is tagged left, right or over by the route that MORE THAN HALF of its rollouts that reached the
goal took past the box, and gets no route tag when none reached it or no route has such a
majority (a 2-2 or 2-1-1 split) (measured_tags).

Writes <out>/eval.json (every rollout and summary, the base paths of the first --paths rollouts
of each latent: the input of dualforce report; with --fences also every fenced world's
rollouts, with their switches, under world_rollouts) and <out>/eval.png (returns per latent and the
heat map of pairwise SF distances). --write-bank writes a copy of the bank with online_return,
online_psi, the measured tags (replacing those of an earlier evaluation), with --expert
passed_filter, and for navigation each latent's goal rate in the world it ran in and, with
--fences, in each fenced world (latents.goal_rate.<world>: what the runtime's skill switching
ranks candidates by). A --world file must then be named with letters, digits, '_' and '-'.

--after-switch (navigation, with --fences) measures what the runtime's switcher most needs to
know: how each latent it may switch to does when it switches to it, from where it switches
(beside a fence, stuck in front of the box, mid-stride) rather than from the start. For the
task's world and each fenced world, and each latent the runtime could switch to there (it
passed, has a route, is not the start latent, not on a fenced side; on the start latent's
route too, which the switcher tries when a stall leaves no route clear), --rollouts runs start
the latent the runtime starts with ("best", as measured above) with switching on (as
--switch-restart and --stall-after say) and that latent the only other one to switch to; the
runs that switched say whether it then reached the goal. eval.json keeps the counts
(after_switch), the summary prints them, and --write-bank writes each latent's share under
latents.goal_rate.<world>_after_switch where at least 5 runs switched to it: the switcher ranks
a candidate by that share where the bank has it, by its rate from the start where not. It adds
about as many rollouts as --fences.

A --world file with a start region (jitter.start_x, start_y, start_yaw: the world a navigation
set was collected in) starts every rollout from a start drawn there: how the bank does from the
data's own starts, which cover where a skill taken over after a switch stands, in seconds rather
than the minutes of --after-switch. From the starts of the sets that reach beside a fence, the
Dual-Force latents measured reached the goal in 23-70% of such rollouts (the start latents of 19
banks, and two more latents of one), clones of one route each in 90-97% (docs/results.md, "Where
the skills taken over fail").

--obs-clip C runs every bank (the expert's too) with its standardised observations clamped to
+-C (skills.Stats.Clip): a wall in the height map that the data never showed is tens of
standard deviations out and can throw a policy off; clamped, it reaches the networks at the edge
of what they were trained on. The --write-bank copy keeps the clip, so that the robot runs what
was measured.
`

// clip sets b's observation clip (skills.Stats.Clip) when c is positive.
func clip(b *skills.Bank, c float64) {
	if c > 0 {
		b.Contract.Normaliser.Clip = float32(c)
	}
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", evalUsage, stderr)
	bankPath := fs.String("bank", "", "skill bank to evaluate (required)")
	task := fs.String("task", "", "task: locomotion or navigation (required)")
	rollouts := fs.Int("rollouts", 30, "rollouts per latent")
	world := fs.String("world", "", "world: a built-in name or a scenario file (default: the task's)")
	out := fs.String("out", "eval", "directory for eval.json and eval.png")
	expertPath := fs.String("expert", "", "SMODICE-expert bank: the reference row and the filter's baseline")
	filter := fs.Float64("filter", 0.5, "fraction of the expert's mean return a latent must reach (with --expert)")
	writeBank := fs.String("write-bank", "", "write a copy of the bank with the online results here")
	seconds := fs.Float64("seconds", 0, "episode length in s (default: the task's)")
	seed := fs.Uint64("seed", 1, "master seed of every rollout")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "simulators run in parallel (one per core)")
	switching := fs.Bool("switching", false, "let the runtime switch navigation skills at obstacles")
	restart := fs.Duration("switch-restart", core.DefaultSwitchConfig().Restart, "with --switching: hand over at a standstill held this long (the runtime's transitions.restart; 0 blends)")
	stallAfter := fs.Duration("stall-after", core.DefaultSwitchConfig().StallAfter, "with --switching: no progress towards the goal this long blocks the route (obstacle_switching.stall_after; 0 turns it off)")
	keepMeasured := fs.Bool("keep-measured", core.DefaultSwitchConfig().KeepMeasured, "with --switching: a skill measured to get through the matching fenced world itself at least as well as any candidate keeps running at the wall (obstacle_switching.keep_measured)")
	noise := fs.Bool("noise", false, "simulate sensor noise (encoders, IMU, mocap)")
	hostDelay := fs.Duration("host-delay", 0, "leave each robot lying with its motors off this long before the runtime connects and stands it up, as a robot powered on before its runtime starts, a real Solo12 (0: connected at power-on, standing, as the data were collected)")
	discount := fs.Float64("sf-discount", 1, "weight of state k in the online SFs is discount^k (1: the episode mean)")
	fences := fs.Bool("fences", false, "navigation: also run every latent in the fenced worlds (left, right, both) and record goal rates per world")
	afterSwitch := fs.Bool("after-switch", false, "navigation, with --fences: also measure each latent's goal rate after the runtime switches to it from its start latent")
	latents := fs.String("latents", "", "evaluate these latents: comma-separated bank indices, or \"best\" (the runtime's start)")
	maxLatents := fs.Int("max-latents", 0, "evaluate at most this many of the bank's latents, spread evenly over skills and iterations (0: all)")
	paths := fs.Int("paths", 2, "rollouts per latent whose base path eval.json keeps (for dualforce report)")
	obsClip := fs.Float64("obs-clip", 0, "clamp every bank's standardised observations to +-this (0: as each bank says); with --write-bank the copy keeps it")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *bankPath == "" || *task == "":
		return usagef("--bank and --task are required")
	case *rollouts < 1 || *workers < 1:
		return usagef("--rollouts %d, --workers %d: want at least 1 of each", *rollouts, *workers)
	case *paths < 0 || *maxLatents < 0:
		return usagef("--paths %d, --max-latents %d: want non-negative numbers", *paths, *maxLatents)
	case *latents != "" && *maxLatents > 0:
		return usagef("--latents and --max-latents: give one")
	case *fences && *task != collect.TaskNavigation:
		return usagef("--fences is the navigation robustness experiment")
	case *afterSwitch && (!*fences || *switching):
		return usagef("--after-switch needs --fences (the start latent is chosen by its fenced rates) and measures the latents alone first (no --switching)")
	case !(*seconds >= 0) || math.IsInf(*seconds, 0):
		return usagef("--seconds %v", *seconds)
	case !(*filter >= 0) || math.IsInf(*filter, 0):
		return usagef("--filter %v", *filter)
	case !(*obsClip >= 0) || *obsClip > math.MaxFloat32:
		return usagef("--obs-clip %v: want 0 (each bank's own) or a positive number", *obsClip)
	}
	cfg, err := eval.TaskConfig(*task)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	cfg.Rollouts, cfg.Seed, cfg.Workers, cfg.Switching, cfg.Discount, cfg.Paths = *rollouts, *seed, *workers, *switching, *discount, *paths
	if *seconds > 0 {
		cfg.Task.EpisodeSeconds = *seconds
	}
	if *stallAfter < 0 || *restart < 0 || *hostDelay < 0 {
		return usagef("--stall-after %v, --switch-restart %v, --host-delay %v: want non-negative durations", *stallAfter, *restart, *hostDelay)
	}
	cfg.HostDelay = *hostDelay
	cfg.Core = func(c *core.Config) {
		c.Switching.Restart, c.Switching.StallAfter, c.Switching.KeepMeasured = *restart, *stallAfter, *keepMeasured
	}
	if *noise {
		cfg.Noise = sensorNoise
	}
	if *world != "" {
		if cfg.Scenario, err = robotboard.LoadScenario(*world); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	if *writeBank != "" {
		if err := checkOutputFiles(*writeBank); err != nil {
			return err
		}
		if *task == collect.TaskNavigation && cfg.Scenario != nil {
			if err := skills.CheckWorldName(cfg.Scenario.Name); err != nil {
				return usagef("--world %s with --write-bank: the bank stores goal rates by world name: %v", *world, err)
			}
		}
	}
	if err := checkOutputDir(*out); err != nil {
		return err
	}
	bank, err := skills.ReadBank(*bankPath)
	if err != nil {
		return err
	}
	clip(bank, *obsClip)
	subjects, err := chooseLatents(bank, *latents, *maxLatents)
	if err != nil {
		return err
	}
	if len(subjects) < len(bank.Latents) {
		how := "spread over skills and iterations"
		if *latents != "" {
			how = "as --latents names them"
		}
		fmt.Fprintf(stdout, "evaluating %d of the bank's %d latents, %s\n", len(subjects), len(bank.Latents), how)
	}
	if *expertPath != "" {
		expert, err := skills.ReadBank(*expertPath)
		if err != nil {
			return err
		}
		clip(expert, *obsClip)
		// One projection for all, the bank's, so that the expert's SFs are comparable.
		cfg.Features = &bank.Contract.Features
		subjects = append([]eval.Subject{{Label: "SMODICE-expert", Bank: expert}}, subjects...)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cfg.Progress = evalProgress(stderr, *task, *quiet)
	res, err := eval.Evaluate(ctx, cfg, subjects)
	if errors.Is(err, eval.ErrConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	if *expertPath != "" {
		if err := res.Filter(0, *filter); err != nil {
			return err
		}
	}
	var worldRuns []eval.WorldRun
	if *fences {
		cfg.Progress = evalProgress(stderr, *task+" (fences)", *quiet)
		if worldRuns, err = eval.Robustness(ctx, cfg, subjects, res, eval.FenceWorlds); err != nil {
			return err
		}
	}
	// The bank as measured so far: what the runtime would start and switch with.
	updated, err := eval.WithOnlineResults(bank, subjects, res)
	if err != nil {
		return err
	}
	if *afterSwitch {
		cfg.Progress = evalProgress(stderr, *task+" (after a switch)", *quiet)
		if res.AfterSwitch, err = eval.AfterSwitch(ctx, cfg, updated, eval.AfterSwitchWorlds); err != nil {
			return err
		}
		if updated, err = eval.WithAfterSwitchRates(updated, res.AfterSwitch); err != nil {
			return err
		}
	}
	jsonPath, pngPath := filepath.Join(*out, "eval.json"), filepath.Join(*out, "eval.png")
	if err := skills.WriteFileAtomic(jsonPath, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}); err != nil {
		return err
	}
	if err := eval.WritePNG(pngPath, res); err != nil {
		return err
	}
	printEval(stdout, res)
	throughput := func(world string, steps, ticks int, seconds float64) {
		fmt.Fprintf(stdout, "%s: %d policy steps (%d link ticks with the stand-ups) in %v on %d workers: %.0f policy steps/s, %.0f ticks/s\n",
			world, steps, ticks, time.Duration(seconds*float64(time.Second)).Round(time.Millisecond), *workers,
			float64(steps)/seconds, float64(ticks)/seconds)
	}
	throughput(res.World, res.PolicySteps, res.Ticks, res.Seconds)
	if len(worldRuns) > 0 {
		printWorldGoalRates(stdout, res, worldRuns)
		for _, w := range worldRuns {
			throughput(w.World, w.PolicySteps, w.Ticks, w.Seconds)
		}
	}
	if a := res.AfterSwitch; a != nil {
		printAfterSwitch(stdout, a)
		for _, w := range a.Runs {
			throughput(w.World+" (after a switch)", w.PolicySteps, w.Ticks, w.Seconds)
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", jsonPath, pngPath)
	if *writeBank != "" {
		if err := saveBank(*writeBank, updated); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (online results of %d latents)\n", *writeBank, len(bank.Latents))
	}
	return nil
}

// evalProgress is a progress bar on a terminal, and a line per tenth of the rollouts elsewhere
// (a log file should not fill with carriage returns). A count that starts again (the next
// world of --fences) starts a new bar.
func evalProgress(w io.Writer, task string, quiet bool) func(done, total int) {
	if quiet {
		return nil
	}
	var (
		bar         *metrics.Bar
		start       time.Time
		last, tenth int
	)
	return func(done, total int) {
		if done <= last || start.IsZero() {
			start, tenth = time.Now(), 0
			bar = metrics.NewBar(w, total, 0, "eval "+task, false)
		}
		last = done
		if bar != nil {
			bar.Set(done)
			if done == total {
				bar.Finish()
			}
			return
		}
		if 10*done/total > tenth {
			tenth = 10 * done / total
			fmt.Fprintf(w, "eval %s: %d of %d rollouts after %v\n", task, done, total, time.Since(start).Round(time.Second))
		}
	}
}

// sensorNoise is --noise: white noise of the magnitudes a Solo12's sensors show (encoder LSBs,
// a MEMS IMU, an optical mocap system).
var sensorNoise = sim.Noise{
	EncoderStd: 1e-3, VelocityStd: 0.05, CurrentStd: 0.02,
	AccelStd: 0.05, GyroStd: 5e-3, AttitudeStd: 2e-3,
	MocapPosStd: 1e-3, MocapYawStd: 2e-3,
}

// printAfterSwitch is the table of goal rates after a switch.
func printAfterSwitch(w io.Writer, a *eval.AfterSwitchResult) {
	fmt.Fprintf(w, "\ngoal after a switch from latent %d (the runtime's start; %d runs per candidate and world, %d candidates)\n",
		a.Start, a.RolloutsPerPair, len(a.Candidates))
	if len(a.Rates) == 0 {
		fmt.Fprintln(w, "no run switched")
		return
	}
	fmt.Fprintf(w, "%-8s %-22s %9s %6s %6s %7s\n", "latent", "blocked as in", "switched", "goal", "fell", "rate")
	for _, r := range a.Rates {
		note := ""
		if r.Switches < eval.MinAfterSwitch {
			note = fmt.Sprintf("  (under %d switches: not written into a bank)", eval.MinAfterSwitch)
		}
		fmt.Fprintf(w, "%-8d %-22s %9d %6d %6d %6.0f%%%s\n", r.Latent, r.World, r.Switches, r.Goal, r.Fell, 100*r.Rate(), note)
	}
}

// printWorldGoalRates is the fence table: every subject's goal rate per world.
func printWorldGoalRates(w io.Writer, res *eval.Result, runs []eval.WorldRun) {
	fmt.Fprintf(w, "\ngoal rate per world (%d rollouts each)\n%-24s %12s", res.Rollouts, "latent", res.World)
	for _, r := range runs {
		fmt.Fprintf(w, " %20s", r.World)
	}
	fmt.Fprintln(w)
	for _, s := range res.Subjects {
		fmt.Fprintf(w, "%-24s %11.0f%%", s.Label, 100*s.GoalRate)
		for _, r := range runs {
			fmt.Fprintf(w, " %19.0f%%", 100*s.WorldGoalRate[r.World])
		}
		fmt.Fprintln(w)
	}
	for i, s := range res.Subjects {
		for _, r := range runs {
			if sw := r.Switches[i]; !sw.Empty() {
				fmt.Fprintf(w, "%-24s %s: ", s.Label, r.World)
				printSwitches(w, sw, res.Rollouts)
			}
		}
	}
}

// printSwitches is one latent's switching in one world, for the --switching summaries.
func printSwitches(w io.Writer, sw eval.SwitchSummary, rollouts int) {
	fmt.Fprintf(w, "switched in %d of %d rollouts (%d switches: obstacle %d, no progress %d); of those rollouts %d reached the goal, %d fell; blocked with no latent to switch to in %d\n",
		sw.Rollouts, rollouts, sw.Switches, sw.Obstacle, sw.NoProgress, sw.Goal, sw.Fell, sw.NowhereToGo)
}

// nearMiss is how close (m) to the goal's edge a miss must end to be counted as stopping short.
const nearMiss = 0.3

func printEval(w io.Writer, res *eval.Result) {
	fmt.Fprintf(w, "%s in %s: %d rollouts of %.1f s per latent, seed %d\n", res.Task, res.World, res.Rollouts, res.EpisodeSeconds, res.Seed)
	fmt.Fprintf(w, "%-24s %18s %6s %6s %9s %9s %s\n", "latent", "return", "falls", "goal", "vel RMSE", "SF to #1", "filter")
	for i, s := range res.Subjects {
		verdict := ""
		if s.Passed != nil {
			verdict = "fail"
			if *s.Passed {
				verdict = "pass"
			}
		}
		fmt.Fprintf(w, "%-24s %9.2f ± %6.2f %5.0f%% %5.0f%% %9.3f %9.3f %s\n", s.Label, s.MeanReturn, s.StdReturn,
			100*s.FallRate, 100*s.GoalRate, s.VelRMSENorm, res.Distances[0][i], verdict)
		if len(s.Routes) > 0 {
			fmt.Fprintf(w, "%-24s routes past the box: left %d, right %d, over %d of %d rollouts\n", "",
				s.Routes[behave.RouteLeft], s.Routes[behave.RouteRight], s.Routes[behave.RouteOver], len(s.Rollouts))
		}
		if near, missed := eval.NearMisses(s.Rollouts, nearMiss); missed > 0 {
			fmt.Fprintf(w, "%-24s goal missed in %d of %d rollouts: %d of them ended within %.1f m of its edge\n", "", missed, len(s.Rollouts), near, nearMiss)
		}
		if sw := eval.SummariseSwitches(s.Rollouts); !sw.Empty() {
			fmt.Fprintf(w, "%-24s ", "")
			printSwitches(w, sw, len(s.Rollouts))
		}
	}
}

// chooseLatents is the subjects of an evaluation: the latents named in list (comma-separated
// indices, or "best"), or else an even subsample of at most max latents (0: all).
func chooseLatents(bank *skills.Bank, list string, max int) ([]eval.Subject, error) {
	all := eval.Latents(bank)
	if list == "" {
		return eval.Subsample(all, max), nil
	}
	if list == "best" {
		best, err := bank.Best()
		if err != nil {
			return nil, err
		}
		return []eval.Subject{all[best.Index]}, nil
	}
	var out []eval.Subject
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= len(all) {
			return nil, usagef("--latents %q: %q is not a latent index of this bank (0 to %d) or \"best\"", list, f, len(all)-1)
		}
		out = append(out, all[i])
	}
	return out, nil
}
