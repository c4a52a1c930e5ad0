// Package gait owns the scripted Solo12 controllers that generate the offline datasets: a trot
// gait generator (leg inverse kinematics from the Solo12 geometry, swing and stance foot
// trajectories, Raibert-style foot placement, heading control) parametrised by forward and lateral
// velocity, yaw rate, base height, step height and gait period.
//
// A controller acts exactly as a learned policy does: it is asked for joint position targets once
// per policy period (20 ms), and the caller maps them to an action in [-1,1]^12 through the
// bank contract (skills), so the scripted data and the learned policies share one action space.
package gait
