// Package eval owns online evaluation: it runs a skill bank's latents in the MuJoCo simulator
// THROUGH the deployed runtime core, so that what is measured is what the robot would run.
//
// A rollout is a world (sim/worlds) with the simulated Solo12 behind its emulated master board
// (sim/robotboard), the runtime core (runtime/core, offsets calibration with the simulator's
// power-on joint angles) and the lockstep driver (runtime/driver) stepping both one millisecond
// at a time: trainer/rig, which dataset collection runs its behaviours on too; navigation banks
// get the perception a robot has (mocap pose and height map, sampled at the perception stream's
// 50 Hz). The core powers the motors on, stands up, holds, and on an
// operator "run" command runs the latent for the task's episode length.
//
// At every policy tick the harness records, from simulator ground truth the runtime never sees,
// the withheld task reward of trainer/collect (the same function the datasets store), the base
// pose, velocity and height, and falls (a fault latched by the core's supervisor, or
// collect.Fallen); from the runtime side, the diversity features phi of the observation the
// policy saw (the bank's skills.Projector) and the estimator's base velocity, reported against
// ground truth.
//
// Evaluate runs N seeded rollouts per latent on parallel workers, one MuJoCo world per goroutine
// at a time. Rollout k of every latent draws the same world, start heading and sensor-noise seed
// from (seed, k), so latents are compared on equal terms and results do not depend on the number
// of workers: same seed, same numbers, bit for bit. Summaries give per latent the mean and
// standard deviation of the return, the mean online successor features, the fall rate, the goal
// rate and the estimator's error; WithOnlineResults writes them back into a copy of the bank.
//
// Every rollout is also described on ground truth (Descriptors: mean base height, forward,
// lateral and yaw velocity; time to the goal, the route past the box), and tagged by what it
// was measured to do (MeasuredTags): a locomotion latent by its height class, a navigation latent
// by the route a strict majority of its goal-reaching rollouts took past the box in the task's
// own world (RouteTag). The first Config.Paths rollouts of each latent keep their base path for
// plots. Robustness reruns the subjects in fenced variants of their world (FencedVariant of
// FenceWorlds: the way round the box fenced off on the left, the right, both) and records each one's goal rate there (and, with
// Config.Switching, a summary of the switches made there: WorldRun.Switches); with switching on,
// every rollout keeps each switch the core made by itself (Rollout.Switches: when, where, from
// and to which latent, what was blocked and why that candidate) and the result records the
// settings the core switched by (Result.Switching);
// AfterSwitch measures what those rates from the start cannot say: each candidate's goal rate
// in the runs where the runtime, starting its start latent, switched to it (from beside a
// fence, in front of the box, mid-stride), by the world matching what blocked.
// WithOnlineResults stores the tags and a navigation latent's goal rate per world in the bank,
// WithAfterSwitchRates its goal rates after a switch, where the runtime's switcher reads them
// (runtime/core.LatentMeasures). Subsample spreads a
// budget of latents evenly over a large bank's skills and iterations. The results file
// (eval.json) is the input of trainer/report: ReadResult reads it back and checks it.
package eval
