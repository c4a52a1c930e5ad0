package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/datafile"
)

func init() {
	register(command{name: "collect", summary: "collect a dataset from scripted behaviours in simulation", run: runCollect})
}

const collectUsage = `Usage: dualforce collect [flags]

Runs the scripted Solo12 behaviours (sim/behave) in MuJoCo behind the emulated master board,
each as the skill of the runtime core in lockstep (the path evaluation and the robot take: power
on, stand up, hold, run), and records what the core observes. Writes two archives:

  <out>              the offline set D_O: observations, actions, next observations, terminal
                     (fall), timeout, episode start, and the withheld task reward, expert flag,
                     behaviour mode and ground-truth base pose; manifest.json inside
  <out>_expert.npz   the expert set D_E: the expert's states only (".npz" is replaced)

Tasks:
  locomotion   expert: straight trot at 0.3 m/s, middle base height, its commands perturbed by
               Gaussian noise of 0.1 (0.08 rad) while the data keep its own actions (DART:
               the data show how it recovers); offline mix: low, middle and high base
               heights, turning gaits, sloppy, drifting, noisy and random policies
  navigation   expert: reaches the goal behind the box around its left, its right or over it,
               with the same DART noise; offline mix: slower, noisier, wandering, tight,
               rushed, stumbling and random

Scales:
  test    for tests (locomotion 2,000 + 8,000 transitions, navigation 3,600 + 3,600: six
          expert episodes, too few to learn navigation from)
  small   trainable on two cores in minutes (locomotion 25,000 + 100,000, navigation 20,000 +
          23,000)
  paper   the paper's counts (locomotion 248,751 expert + 996,000 behaviour transitions,
          navigation 654,501 + 749,501): the shipped navigation bank's data (banks/build.sh)

--action-scale S makes an action of 1 mean S rad of joint target from the default pose (the
contract's scale, which training, evaluation and the runtime read from the files); the
behaviours' noise stays the same in radians. The navigation expert's over route needs about
1.2 to climb a 0.10 m box without its knee targets clipping.

--other-side-fence F (navigation) lays out that share of the episodes with a fence on the side
of the box their route does not take (either side for the over route and the random policy):
the runtime switches skills beside a fence, and a skill whose data never showed a fence in its
height map meets a state it does not know.

--turn-back F (navigation) makes that share of the navigator episodes head first for another
way past the box (the other side; for the over route the fenced side) and turn back there to
their own route: where a runtime switch at a fence leaves the robot. Measured at 0.5 on the
start-region set (docs/results.md, "episodes that turn back"): nothing in a state says whether
its episode turns back, route clones get worse (right clone 10% at the goal, 100% without), and
Dual-Force's weights do not choose between the two kinds of episode.

--fence-on-route (with --other-side-fence) puts the fence of the left and right routes' fenced
episodes on their own side instead: they head for it on their way, turn in sight of it (0.3 m
before it), step across and back to a run-up on the box's centre line and go over the box. The
way to a fence is then the route's own with or without one, and the turn is what the fence in
sight causes, as the runtime's switch is. Measured at 0.5 on the start-region set
(docs/results.md, "an expert that meets the fence"): a clone of the expert turns at the fence
and goes over by itself (20 of 30 rollouts at the goal with its side fenced, 4 falls).

The data depend only on --task, --scale, --world, --action-scale, --other-side-fence,
--turn-back, --fence-on-route and --seed, not on --workers. --out is checked before anything
is collected (its directory is created at the write if it does not exist).
`

func runCollect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("collect", collectUsage, stderr)
	task := fs.String("task", collect.TaskLocomotion, "task: locomotion or navigation")
	scale := fs.String("scale", string(collect.ScaleTest), "dataset size: test, small or paper")
	seed := fs.Uint64("seed", 1, "master seed of every random choice")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "simulators run in parallel (one per core)")
	out := fs.String("out", "", "offline archive to write (default <task>.npz)")
	world := fs.String("world", "", "world: a scenario YAML file or a built-in world (default: the task's)")
	actionScale := fs.Float64("action-scale", collect.ActionScale, "rad of joint target per unit of action")
	otherSideFence := fs.Float64("other-side-fence", 0, "navigation: share of episodes with a fence on the side of the box their route does not take (0..1)")
	turnBack := fs.Float64("turn-back", 0, "navigation: share of navigator episodes that head first for another way past the box and turn back at it to their own (0..1)")
	fenceOnRoute := fs.Bool("fence-on-route", false, "navigation: the left and right routes' fenced episodes meet the fence on their own side and turn there to go over the box (with -other-side-fence)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *workers < 1 {
		return usagef("-workers %d: want at least 1", *workers)
	}
	if *out == "" {
		*out = *task + ".npz"
	}
	plan, err := collect.NewPlan(*task, collect.Scale(*scale), *seed)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := plan.SetActionScale(*actionScale); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *world != "" {
		plan.Task.World = *world // Collect checks it before it starts
	}
	plan.OtherSideFence = *otherSideFence // checked with the world
	plan.TurnBack, plan.FenceOnRoute = *turnBack, *fenceOnRoute
	expertPath := datafile.ExpertPath(*out)
	if err := checkOutputFiles(*out, expertPath); err != nil {
		return err
	}
	opt := collect.Options{Workers: *workers}
	if !*quiet {
		var bar *progressbar.ProgressBar
		opt.Progress = func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total,
					progressbar.OptionSetWriter(stderr),
					progressbar.OptionSetDescription(fmt.Sprintf("%s %s", *task, *scale)),
					progressbar.OptionShowCount(),
					progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("transitions"),
					progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(200*time.Millisecond),
					progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
				)
			}
			_ = bar.Set(done)
		}
	}
	start := time.Now()
	res, err := collect.Collect(ctx, plan, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := createParents(*out, expertPath); err != nil {
		return err
	}
	if err := datafile.WriteOffline(*out, res.Offline); err != nil {
		return err
	}
	if err := datafile.WriteExpert(expertPath, res.Expert); err != nil {
		return err
	}
	n := res.Offline.Data.Len()
	fmt.Fprintf(stdout, "collected %d transitions (%d expert) in %v on %d workers: %.0f transitions/s\nwrote %s and %s\n",
		n, res.Offline.Manifest.ExpertTransitions, elapsed.Round(time.Millisecond), *workers, float64(n)/elapsed.Seconds(), *out, expertPath)
	return nil
}
