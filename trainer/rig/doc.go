// Package rig owns the one way the trainer runs a skill: a simulated Solo12 behind its emulated
// master board (sim/robotboard), driven in lockstep by the deployed runtime core
// (runtime/core, runtime/driver), with the perception stream a robot has for navigation banks.
// Dataset collection (trainer/collect, a scripted behaviour as the core's actor) and evaluation
// (trainer/eval, a bank's policy) both stand the robot up, start the skill and read every
// policy tick through RunSkill, so that data are recorded on the path the robot runs.
package rig
