// Package collect owns dataset collection: it runs the scripted behaviours of sim/behave on
// simulated Solo12s and records the offline and expert datasets (trainer/datafile) of the
// locomotion and obstacle-navigation tasks.
//
// An episode runs the way a skill runs on the robot, on the path evaluation uses (trainer/rig):
// the simulated robot powers on behind its emulated master board, the runtime core, stepped in
// lockstep, stands it up, holds it and starts the skill on an operator "run"; the behaviour is
// the core's actor (runtime/core.Config.Actor) in place of a bank's policy. So the observations
// are the core's own (wire codec, joint map, estimator, perception stream, skills.Builder), the
// targets are slewed by the core's configured limit, and an episode's first observation is the
// one a deployed skill sees first. The behaviours and the withheld columns (reward, falls, goal,
// base pose) use simulator ground truth; the observations never do. A fault the core's
// supervisor latches ends an episode like a fall.
//
// A Plan fixes the task, the contract (action scale and PD gains chosen so the scripted gaits
// fit in [-1,1]), the modes with their transition quotas and the seed; Collect fills the quotas
// on parallel workers with a result that does not depend on the number of workers.
//
// A mode may carry execution noise (DART): the robot is commanded the behaviour's action plus
// Gaussian noise while the dataset records the behaviour's own action, so the data show how it
// recovers from small mistakes. The experts carry it; without it, policies cloned from the
// locomotion expert fitted its actions almost exactly and still stood still or shuffled online.
package collect
