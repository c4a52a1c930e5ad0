// Package behave owns the scripted behaviours that generate the offline datasets: controllers
// that act exactly as a learned policy does, one action in [-1,1]^12 per 20 ms policy step,
// mapped to joint targets by the contract's skills.ActionMap.
//
//   - Walk: a sim/gait trot with heading hold, parametrised by velocity, yaw rate, base height,
//     step height and period; with optional heading drift and action noise it also gives the
//     sloppy and noisy behaviours of the offline mix.
//   - Navigate: reaches the goal behind the box of an obstacle layout by going around its left,
//     around its right, or over the top with high steps, steering a Walk along waypoints.
//   - Random: Gaussian actions around the default pose.
//
// Controllers read simulator ground truth (State): they are data generators, not policies, and
// nothing they read is stored as an observation. A Spec describes a behaviour completely and is
// JSON-serialisable so a dataset manifest can record it; New builds its controller for one
// episode. Controllers are not safe for concurrent use: one per episode and goroutine.
package behave
