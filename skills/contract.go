package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Ceilings of the PD gains the master-board link can carry for Solo12: the
// command packet holds kp in Q11 A/turn and kd in Q10 A/krpm (int16), i.e.
// motor-side at most 32767/2048/(2 pi) A/rad and 32767/1024/(2 pi*1000/60)
// A*s/rad, times N^2*kt = 81*0.025 Nm/A on the joint side (masterboard.md).
// A bank above them would be silently clamped by the link.
const (
	MaxKp = 32767.0 / 2048 / (2 * math.Pi) * 81 * 0.025             // about 5.1565 Nm/rad
	MaxKd = 32767.0 / 1024 / (2 * math.Pi * 1000 / 60) * 81 * 0.025 // about 0.6188 Nm*s/rad
)

// Defaults for a new contract, inside the ranges of public Solo12 deployments.
const (
	DefaultActionScale = 0.3
	DefaultKp          = 3.0  // Nm/rad
	DefaultKd          = 0.2  // Nm*s/rad
	DefaultPolicyHz    = 50   // one policy step every 20 ms
	DefaultLinkHz      = 1000 // master-board loop
)

// ErrInvalidContract wraps every Contract.Validate failure.
var ErrInvalidContract = errors.New("skills: invalid contract")

// Contract is everything the runtime needs, besides the networks, to run a
// bank exactly as it was trained: it travels inside the bank.
type Contract struct {
	Layout         Layout         `json:"layout"`
	Normaliser     Stats          `json:"normaliser"`
	ActionScale    float32        `json:"action_scale"`
	DefaultPose    JointVector    `json:"default_pose"` // rad
	JointLower     JointVector    `json:"joint_lower"`  // rad
	JointUpper     JointVector    `json:"joint_upper"`  // rad
	Kp             float64        `json:"kp"`           // joint side, Nm/rad
	Kd             float64        `json:"kd"`           // joint side, Nm*s/rad
	PolicyHz       int            `json:"policy_hz"`
	LinkHz         int            `json:"link_hz"`
	Features       Features       `json:"features"`
	HeightMap      *HeightMapSpec `json:"height_map,omitempty"`      // present iff the layout has height_map
	EpisodeSeconds float64        `json:"episode_seconds,omitempty"` // scales remaining_time; required iff the layout has it
	// Command is, for layouts with a command field, the command (vx, vy in m/s, yaw rate in
	// rad/s) the data carried: a bank's skills were trained under it, so the runtime starts
	// with it until an operator sends another.
	Command *[3]float32 `json:"command,omitempty"`
}

// JointVector is one value per joint in JointNames order. Unlike a plain
// array it refuses JSON with the wrong number of values instead of
// zero-filling or dropping them.
type JointVector [NumJoints]float32

// UnmarshalJSON implements json.Unmarshaler.
func (v *JointVector) UnmarshalJSON(b []byte) error {
	var s []float32
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if len(s) != NumJoints {
		return fmt.Errorf("skills: joint vector has %d values, want %d", len(s), NumJoints)
	}
	copy(v[:], s)
	return nil
}

// NewContract returns a contract for layout l filled with the defaults above,
// identity normaliser and feature statistics, the standing pose and the
// hardware joint limits. Layouts with remaining_time still need
// EpisodeSeconds: it is a property of how data was collected, not a default.
func NewContract(l Layout) (Contract, error) {
	fields, err := DefaultFeatureFields(l.Name)
	if err != nil {
		return Contract{}, err
	}
	c := Contract{
		Layout:      l,
		Normaliser:  IdentityStats(l.Dim()),
		ActionScale: DefaultActionScale,
		DefaultPose: StandingPose,
		Kp:          DefaultKp,
		Kd:          DefaultKd,
		PolicyHz:    DefaultPolicyHz,
		LinkHz:      DefaultLinkHz,
		Features:    Features{Fields: fields},
	}
	for j, lim := range HardwareJointLimits {
		c.JointLower[j], c.JointUpper[j] = -lim, lim
	}
	c.Features.Stats = IdentityStats(c.Features.Dim(l))
	if _, ok := l.Field(FieldHeightMap); ok {
		hm := DefaultHeightMap()
		c.HeightMap = &hm
	}
	return c, nil
}

// Validate checks the contract's internal consistency and the hardware
// ceilings; it reports every problem it finds.
func (c *Contract) Validate() error {
	var problems []string
	check := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	check(c.Layout.Validate())
	dim := c.Layout.Dim()
	if err := c.Normaliser.Validate(dim); err != nil {
		check(fmt.Errorf("normaliser: %w", err))
	}
	check(c.ActionMap().Validate())
	if !(c.Kp >= 0 && c.Kp <= MaxKp) {
		check(fmt.Errorf("kp %v Nm/rad outside [0, %.4f] (link ceiling)", c.Kp, MaxKp))
	}
	if !(c.Kd >= 0 && c.Kd <= MaxKd) {
		check(fmt.Errorf("kd %v Nm*s/rad outside [0, %.4f] (link ceiling)", c.Kd, MaxKd))
	}
	switch {
	case c.PolicyHz <= 0 || c.LinkHz <= 0:
		check(fmt.Errorf("rates must be positive: policy %d Hz, link %d Hz", c.PolicyHz, c.LinkHz))
	case c.LinkHz%c.PolicyHz != 0:
		check(fmt.Errorf("link rate %d Hz is not a multiple of policy rate %d Hz", c.LinkHz, c.PolicyHz))
	}
	check(c.Features.Validate(c.Layout))
	_, hasMap := c.Layout.Field(FieldHeightMap)
	switch {
	case hasMap && c.HeightMap == nil:
		check(errors.New("layout has height_map but the contract has no height-map spec"))
	case !hasMap && c.HeightMap != nil:
		check(errors.New("height-map spec given for a layout without height_map"))
	case hasMap:
		f, _ := c.Layout.Field(FieldHeightMap)
		hm := c.HeightMap
		if hm.Rows <= 0 || hm.Cols <= 0 || hm.Rows*hm.Cols != f.Dim {
			check(fmt.Errorf("height map %dx%d does not fill the %d-dim field", hm.Rows, hm.Cols, f.Dim))
		}
		if !(hm.Spacing > 0) || math.Abs(hm.Extent-hm.Spacing*float64(hm.Rows-1)/2) > 1e-9 || hm.Rows != hm.Cols {
			check(fmt.Errorf("height map spacing %v m, extent %v m: want a square grid centred on the base", hm.Spacing, hm.Extent))
		}
	}
	_, hasTime := c.Layout.Field(FieldRemainingTime)
	switch {
	case hasTime && !(c.EpisodeSeconds > 0 && c.EpisodeSeconds <= 1e6):
		check(fmt.Errorf("layout has remaining_time but episode length is %v s", c.EpisodeSeconds))
	case !hasTime && c.EpisodeSeconds != 0:
		check(fmt.Errorf("episode length %v s given for a layout without remaining_time", c.EpisodeSeconds))
	}
	_, hasCommand := c.Layout.Field(FieldCommand)
	switch {
	case c.Command != nil && !hasCommand:
		check(fmt.Errorf("command %v given for a layout without a command field", *c.Command))
	case c.Command != nil && !allFinite(c.Command[:]):
		check(fmt.Errorf("command %v is not finite", *c.Command))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidContract, strings.Join(problems, "; "))
	}
	return nil
}

// CheckFeedable reports whether this runtime can feed the contract: its
// layout is one of Layouts and its height-map grid, if any, is
// DefaultHeightMap's.
func (c *Contract) CheckFeedable() error {
	if err := CheckFeedable(c.Layout); err != nil {
		return err
	}
	if hm := c.HeightMap; hm != nil {
		d := DefaultHeightMap()
		if hm.Rows != d.Rows || hm.Cols != d.Cols || hm.Spacing != d.Spacing || hm.Extent != d.Extent {
			return fmt.Errorf("%w: height map %dx%d at %v m spacing, +-%v m; runtime feeds %dx%d at %v m, +-%v m",
				ErrLayoutMismatch, hm.Rows, hm.Cols, hm.Spacing, hm.Extent, d.Rows, d.Cols, d.Spacing, d.Extent)
		}
	}
	return nil
}

// ActionMap returns the contract's action mapping.
func (c *Contract) ActionMap() ActionMap {
	return ActionMap{DefaultPose: c.DefaultPose, Scale: c.ActionScale, Lower: c.JointLower, Upper: c.JointUpper}
}

// LinkTicksPerPolicyStep is how many link cycles one policy output is held.
func (c *Contract) LinkTicksPerPolicyStep() int { return c.LinkHz / c.PolicyHz }

// NewBuilder returns the observation builder of this contract, normalising
// with its statistics.
func (c *Contract) NewBuilder() (*Builder, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	norm, err := NewNormaliser(c.Normaliser)
	if err != nil {
		return nil, err
	}
	return NewBuilder(c.Layout, c.DefaultPose, c.EpisodeSeconds, norm)
}

// NewProjector returns the feature projection phi of this contract.
func (c *Contract) NewProjector() (*Projector, error) {
	return NewProjector(c.Layout, c.Features)
}
