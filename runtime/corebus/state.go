package corebus

import "time"

// SkillSource says where the running skill came from.
type SkillSource uint8

// Skill sources; the zero value means no skill runs.
const (
	SkillNone   SkillSource = iota
	SkillBank               // the catalogue's skill Index
	SkillLatent             // a latent the operator sent
)

// ActiveSkill says what the policy is running.
type ActiveSkill struct {
	Source SkillSource
	Index  int // catalogue index when Source is SkillBank
}

// LoopStats are the control loop's counters since start.
type LoopStats struct {
	Ticks       uint64        // link ticks stepped
	PolicyTicks uint64        // policy ticks stepped
	Overruns    uint64        // ticks that missed their deadline
	MaxLateness time.Duration // worst tick lateness since start
	LinkLost    uint64        // sensor packets the link lost
	LinkLatency time.Duration // latest command-to-sensor round trip
}

// RobotState is what the estimator believes about the robot.
type RobotState struct {
	BaseLinVel  [3]float64  // m/s, base frame
	BaseAngVel  [3]float64  // rad/s, base frame
	Attitude    [3]float64  // roll, pitch, yaw in rad
	JointPos    [12]float64 // rad, house joint order
	JointVel    [12]float64 // rad/s
	JointTorque [12]float64 // Nm
}

// Snapshot is the core's state as of one policy tick.
type Snapshot struct {
	Mode  Mode
	EStop bool   // the emergency stop is latched
	Fault string // the active fault's code, empty when none
	Skill ActiveSkill
	Loop  LoopStats
	Robot RobotState
}

// Skill is one recallable skill of a bank.
type Skill struct {
	Index int
	Name  string
	Tags  []string
}

// Catalogue is the loaded bank's list of skills. A Catalogue is immutable:
// the core builds a new one, with a new Generation, on every bank swap.
type Catalogue struct {
	Generation uint64
	Path       string // the bank file
	LatentDim  int    // size of a latent an operator may send
	Skills     []Skill
}
