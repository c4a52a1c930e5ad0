package core

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// Limits are the safety supervisor's thresholds.
type Limits struct {
	MaxCurrent       float64       // A of motor current, the drivers' saturation
	JointLower       [12]float64   // rad; outside latches a fault once calibrated
	JointUpper       [12]float64   // rad
	MaxJointVelocity float64       // rad/s
	MaxAttitude      float64       // rad of roll or pitch
	MaxTargetRate    float64       // rad/s a joint target may move; faster targets are slewed; 0 = off
	OverrunBudget    int           // consecutive overrun ticks tolerated
	LinkTimeout      time.Duration // no fresh sensor packet for longer latches a fault
	SafetyDamping    float64       // Nm*s/rad of the damping controller
}

// DefaultMaxTargetRate (rad/s) is how fast a new policy target is approached, one link tick at a
// time. Data collection applies scripted targets the same way (trainer/collect), so banks are
// trained on the motion the robot will make.
const DefaultMaxTargetRate = 30

// DefaultLinkTimeout is how long without a fresh sensor packet latches a fault: the board's own
// timeout for commands, so that both ends give up together.
const DefaultLinkTimeout = 20 * time.Millisecond

// DefaultLimits are odri_control_interface's Solo12 defaults, plus ours for attitude, target rate,
// overruns and the link (which matches the board's own 20 ms command timeout).
func DefaultLimits() Limits {
	l := Limits{
		MaxCurrent:       solo12.MaxCurrent,
		MaxJointVelocity: 80,
		MaxAttitude:      0.8,
		MaxTargetRate:    DefaultMaxTargetRate,
		OverrunBudget:    5,
		LinkTimeout:      DefaultLinkTimeout,
		SafetyDamping:    0.2,
	}
	lim := solo12.PositionLimits()
	for j := range lim {
		l.JointLower[j], l.JointUpper[j] = -lim[j], lim[j]
	}
	return l
}

// CalibrationMode says where joint offsets come from.
type CalibrationMode uint8

const (
	// CalibrateIndex runs the index search at start-up.
	CalibrateIndex CalibrationMode = iota
	// CalibrateOffsets trusts Config.Offsets (for a robot whose encoders kept their zero, or the
	// simulator, which starts with its encoders at the joint zero).
	CalibrateOffsets
)

// Config sets up a Core.
type Config struct {
	Bank *skills.Bank
	// Skill is the bank latent to run first (index into Bank.Latents).
	Skill       int
	Calibration CalibrationMode
	Offsets     [12]float64              // joint offsets for CalibrateOffsets
	Index       solo12.CalibrationConfig // index search settings for CalibrateIndex
	Limits      Limits
	// StandUp is how long the smooth move to the default pose takes.
	StandUp time.Duration
	// AutoRun starts the skill once the robot has stood and held the default pose for Settle;
	// otherwise it holds until told to run.
	AutoRun bool
	// Settle is how long auto-run holds the default pose before running: the start that
	// collection and evaluation give every skill (trainer/rig), so a skill starts as it was
	// trained and measured.
	Settle time.Duration
	// Kp and Kd override the bank's PD gains when non-zero (joint side).
	Kp, Kd float64
	// Velocity is the locomotion command before any operator sends one; zero takes the command
	// the bank was trained with (Contract.Command), if it names one.
	Velocity [3]float64
	// Goal is the navigation goal (world x, y, yaw) before any operator sends one.
	Goal [3]float64
	// SliderRequired makes a stale or missing slider box a fault.
	SliderRequired bool
	// StopDamping is how long Stop damps before switching the motors off.
	StopDamping time.Duration
	// Obstacle switching (navigation banks): see Switcher.
	Switching SwitchConfig
	// Blend is how long the joint targets take to move from the old skill's to the new one's
	// after a switch while running (a smooth ramp, inside the target slew limit); 0 jumps.
	Blend time.Duration
	// RecallMaxDistance is how far (latent units) the nearest stored latent may lie from a
	// reward's FRE encoding for a recall to take it; a recall command may ask for less or more.
	RecallMaxDistance float64
	// RequestBank receives bank-load commands at a policy tick. Loading is IO, so the core never
	// does it: the driver's loader reads and prepares the file off the control thread and answers
	// with OfferBank. It must not block; returning false refuses the command (loader busy).
	// nil refuses every bank load.
	RequestBank func(cmd corebus.Command) bool
	// Actor, when set, chooses the actions in place of the bank's policies, which then only lend
	// their contract: a scripted behaviour recording a dataset through this core, so that data
	// and deployment share one path (trainer/collect). The robot never sets it.
	Actor Actor
}

// Actor maps the normalised observation to an action in [-1, 1]^12 at a policy tick, as a
// bank's skills.Policy does. An error trips the non-finite action fault.
type Actor interface {
	Act(obs, action []float32) error
}

// DefaultConfig returns a config for bank with the safety defaults.
func DefaultConfig(bank *skills.Bank) Config {
	return Config{
		Bank:              bank,
		Calibration:       CalibrateIndex,
		Index:             solo12.DefaultCalibration(),
		Limits:            DefaultLimits(),
		StandUp:           2 * time.Second,
		Settle:            DefaultSettle,
		StopDamping:       time.Second,
		Switching:         DefaultSwitchConfig(),
		Blend:             DefaultBlend,
		RecallMaxDistance: DefaultRecallMaxDistance,
	}
}

// Defaults of the skill transitions and recall.
const (
	// DefaultBlend moves the targets to a new skill's over 300 ms: a tenth of a trot cycle
	// per 30 ms, well inside the default slew limit, and short of the switch cooldown.
	DefaultBlend = 300 * time.Millisecond
	// DefaultSettle lets the robot come to rest in the default pose for 500 ms after standing
	// up before a skill runs.
	DefaultSettle = 500 * time.Millisecond
	// DefaultRecallMaxDistance accepts a stored latent within 0.5 of a reward's encoding.
	DefaultRecallMaxDistance = 0.5
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("core: bad config")

func errConfigf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

func (c *Config) validate() error {
	bad := errConfigf
	if c.Bank == nil {
		return bad("no bank")
	}
	if err := c.Bank.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := skills.CheckFeedable(c.Bank.Contract.Layout, skills.Locomotion48(), skills.Navigation171()); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.Skill < 0 || c.Skill >= len(c.Bank.Latents) {
		return bad("skill %d: the bank has %d latents", c.Skill, len(c.Bank.Latents))
	}
	ct := &c.Bank.Contract
	if ct.LinkHz != 1000 || ct.PolicyHz <= 0 || ct.LinkHz%ct.PolicyHz != 0 {
		return bad("bank rates: link %d Hz, policy %d Hz (need a 1000 Hz link and a policy rate dividing it)", ct.LinkHz, ct.PolicyHz)
	}
	l := &c.Limits
	switch {
	case !(l.MaxCurrent > 0) || l.MaxCurrent > 15.875:
		return bad("max current %v A outside (0, 15.875]", l.MaxCurrent)
	case !(l.MaxJointVelocity > 0), !(l.MaxAttitude > 0), !(l.MaxTargetRate >= 0):
		return bad("joint velocity and attitude limits must be positive, the target rate limit non-negative")
	case l.OverrunBudget < 0, l.LinkTimeout <= 0:
		return bad("overrun budget must be >= 0 and link timeout > 0")
	case l.SafetyDamping < 0 || l.SafetyDamping > solo12.MaxJointKd:
		return bad("safety damping %v outside [0, %.4f]", l.SafetyDamping, solo12.MaxJointKd)
	}
	for j := range l.JointLower {
		if !(l.JointLower[j] < l.JointUpper[j]) {
			return bad("joint %d limits [%v, %v]", j, l.JointLower[j], l.JointUpper[j])
		}
	}
	if c.Kp < 0 || c.Kp > solo12.MaxJointKp || c.Kd < 0 || c.Kd > solo12.MaxJointKd {
		return bad("gain override kp %v kd %v outside the link ceilings %.4f / %.4f", c.Kp, c.Kd, solo12.MaxJointKp, solo12.MaxJointKd)
	}
	for _, v := range append(c.Offsets[:], c.Velocity[0], c.Velocity[1], c.Velocity[2], c.Goal[0], c.Goal[1], c.Goal[2]) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("non-finite offset, velocity or goal")
		}
	}
	if c.StandUp <= 0 || c.StopDamping < 0 || c.Settle < 0 {
		return bad("stand-up time must be positive and stop damping non-negative")
	}
	if c.Blend < 0 || !(c.RecallMaxDistance >= 0) || math.IsInf(c.RecallMaxDistance, 0) {
		return bad("blend %v must not be negative, the recall distance %v finite and non-negative", c.Blend, c.RecallMaxDistance)
	}
	if c.Switching.Enabled {
		return c.Switching.validate()
	}
	return nil
}
