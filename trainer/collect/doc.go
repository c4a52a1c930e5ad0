// Package collect owns dataset collection: it runs the scripted behaviours of sim/behave on
// simulated Solo12s and records the offline and expert datasets (trainer/datafile) of the
// locomotion and obstacle-navigation tasks.
//
// Observations are built exactly as the runtime builds them on the robot: the simulated robot
// sits behind the emulated master board (hw/board with sim.BoardPlant), every 1 ms the command
// and sensor payloads go through the hw/proto codec (the wire's quantisation included), joint
// states through hw/solo12's Map, base velocity and attitude through runtime/estimator, and the
// vector through the contract's skills.Builder; navigation adds the perception a robot has (the
// mocap pose and the 11x11 height map). Each worker drives its board in lockstep from one
// goroutine (HandlePayload / Tick, no sockets). The controllers and the withheld columns
// (reward, falls, goal, base pose) use simulator ground truth; the observations never do.
//
// A Plan fixes the task, the contract (action scale and PD gains chosen so the scripted gaits
// fit in [-1,1]), the modes with their transition quotas and the seed; Collect fills the quotas
// on parallel workers with a result that does not depend on the number of workers.
//
// A mode may carry execution noise (DART): the robot is commanded the behaviour's action plus
// Gaussian noise while the dataset records the behaviour's own action, so the data show how it
// recovers from small mistakes. The locomotion expert carries it; without it, policies cloned
// from the expert fitted its actions almost exactly and still stood still or shuffled online.
package collect
