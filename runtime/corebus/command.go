package corebus

import "time"

// Kind says what a Command asks of the core.
type Kind uint8

// Command kinds. The zero Kind is never sent.
const (
	KindNone       Kind = iota
	KindSkill           // switch to Command.Skill
	KindMode            // go to Command.Mode
	KindEStop           // latch the emergency stop
	KindEStopClear      // release a latched emergency stop
	KindVelocity        // track Command.Velocity
	KindGoal            // navigate to Command.Goal
	KindBank            // load Command.BankPath and swap it in atomically, keeping the old bank on any error
	KindHeartbeat       // the operator is present (the adapter's dead-man already acts on silence)
	// KindStandStill comes from the operator dead-man, not from an operator:
	// stop moving (zero velocity, run becomes stand). It must never start
	// motion, so from damp or stop it changes nothing.
	KindStandStill
	KindRecall // run the stored skill that best serves Command.Reward
)

var kindNames = [...]string{"none", "skill", "mode", "estop", "estop_clear", "velocity", "goal", "bank", "heartbeat", "stand_still", "recall"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Mode is the runtime's operating mode.
type Mode uint8

// Modes. The zero Mode means the core has not reported one yet.
const (
	ModeUnknown Mode = iota
	ModeStop         // motors off
	ModeDamp         // joints damped, no position target
	ModeStand        // hold the standing pose
	ModeRun          // the selected skill's policy drives the joints
)

var modeNames = [...]string{"unknown", "stop", "damp", "stand", "run"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// ParseMode returns the commandable Mode called name.
func ParseMode(name string) (Mode, bool) {
	for m := ModeStop; m <= ModeRun; m++ {
		if modeNames[m] == name {
			return m, true
		}
	}
	return ModeUnknown, false
}

// SelectBy says how the operator named a skill.
type SelectBy uint8

// Ways to select a skill.
const (
	SelectByIndex SelectBy = iota
	SelectByName
	SelectByTag
	SelectByLatent
)

// SkillSelection is a validated skill choice. Index and Generation are set
// for every way except SelectByLatent, where Latent holds a vector of the
// catalogue's latent size, every element finite.
type SkillSelection struct {
	By         SelectBy
	Index      int
	Generation uint64 // Catalogue.Generation the index was resolved against: the core refuses it after a bank swap
	Latent     []float32
}

// Velocity is a base velocity command in the base frame.
type Velocity struct {
	Vx, Vy  float64 // m/s
	YawRate float64 // rad/s
}

// Goal is a navigation target in the world frame.
type Goal struct {
	X, Y float64 // m
	Yaw  float64 // rad, in [-pi, pi]
}

// RewardTerm is one weight of a linear reward on a named element of the raw observation
// (skills.ElementOffset names them: "base_lin_vel.x", "joint_pos.FL_KFE", "height_map[60]").
type RewardTerm struct {
	Element string
	Weight  float64
}

// Bounds of one recall command, so that it fits the flight recorder's input record (4 KiB)
// with room to spare.
const (
	MaxRewardTerms   = 32
	MaxElementLength = 40 // bytes of an element name
)

// Recall asks for the stored skill that best serves a reward.
type Recall struct {
	Reward []RewardTerm // 1..MaxRewardTerms terms, finite weights, elements named once
	// MaxDistance is how far (latent units) the nearest stored latent may be from the reward's
	// encoding on the FRE path; 0 takes the runtime's configured threshold.
	MaxDistance float64
	// Latent is the reward's FRE encoding against bank Generation, filled when the command is
	// offered to the core (encoding takes milliseconds: never on the control thread); nil when
	// the reward lies in the bank's features or could not be encoded.
	Latent     []float32
	Generation uint64
}

// Command is one validated operator command. Only the fields of its Kind are
// set. The strings and the latent slice belong to the command: the adapter
// never reuses them, so the core may keep them without copying.
type Command struct {
	Kind    Kind
	ID      string // the operator's id, empty for velocity, heartbeat and stand-still
	ReplyTo string // where the adapter sends the reply; empty for none

	IssuedAt time.Time     // wall time the operator stamped
	Lifetime time.Duration // how long the command stays valid from the moment it was validated

	Skill    SkillSelection
	Mode     Mode
	Velocity Velocity
	Goal     Goal
	BankPath string // absolute, cleaned, inside the configured bank directory
	Recall   Recall
}
