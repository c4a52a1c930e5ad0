package solo12

import (
	"strings"

	"github.com/dualforce/dualforce/hw/proto"
)

// NumJoints is the number of actuated joints; one motor drives each joint.
const NumJoints = 12

// Joint indexes the project-wide joint order.
type Joint int

// The project-wide joint order.
const (
	FLHAA Joint = iota
	FLHFE
	FLKFE
	FRHAA
	FRHFE
	FRKFE
	HLHAA
	HLHFE
	HLKFE
	HRHAA
	HRHFE
	HRKFE
)

var jointNames = [NumJoints]string{
	"FL_HAA", "FL_HFE", "FL_KFE", "FR_HAA", "FR_HFE", "FR_KFE",
	"HL_HAA", "HL_HFE", "HL_KFE", "HR_HAA", "HR_HFE", "HR_KFE",
}

func (j Joint) String() string {
	if j < 0 || j >= NumJoints {
		return "joint?"
	}
	return jointNames[j]
}

// Valid reports whether j names one of the twelve joints.
func (j Joint) Valid() bool { return j >= 0 && j < NumJoints }

// Leg is the leg j belongs to.
func (j Joint) Leg() Leg { return Leg(j / JointsPerLeg) }

// Kind is which of the leg's three joints j is.
func (j Joint) Kind() JointKind { return JointKind(j % JointsPerLeg) }

// Motor is the master-board motor number that drives j (driver Motor()/2, port Motor()%2).
func (j Joint) Motor() int { return motorNumbers[j] }

// Driver is the master-board driver index of j's motor.
func (j Joint) Driver() int { return motorNumbers[j] / proto.MotorsPerDriver }

// Port is the motor port (0 or 1) on j's driver.
func (j Joint) Port() int { return motorNumbers[j] % proto.MotorsPerDriver }

// Polarity is +1 or -1: the sign between the joint's and its motor's direction of rotation.
func (j Joint) Polarity() float64 { return polarity[j] }

// PositionLimit is the symmetric joint position limit of j in rad.
func (j Joint) PositionLimit() float64 { return positionLimit[j.Kind()] }

// JointByName finds a joint by its name, e.g. "HR_KFE".
func JointByName(name string) (Joint, bool) {
	for j, n := range jointNames {
		if n == name {
			return Joint(j), true
		}
	}
	return 0, false
}

// JointKind names the three joints of a leg.
type JointKind int

// Joint kinds in leg order.
const (
	HAA JointKind = iota // hip abduction/adduction, about x
	HFE                  // hip flexion/extension, about y
	KFE                  // knee flexion/extension, about y
)

// JointsPerLeg is the number of joints of each leg.
const JointsPerLeg = 3

// Leg names the four legs in joint order.
type Leg int

// Legs in joint order.
const (
	FL Leg = iota
	FR
	HL
	HR
)

// NumLegs is the number of legs.
const NumLegs = 4

func (l Leg) String() string {
	if l < 0 || l >= NumLegs {
		return "leg?"
	}
	return [NumLegs]string{"FL", "FR", "HL", "HR"}[l]
}

// Joint returns the joint of kind k on leg l.
func (l Leg) Joint(k JointKind) Joint { return Joint(int(l)*JointsPerLeg + int(k)) }

// Drive train of every Solo12 joint.
const (
	GearRatio     = 9.0   // motor turns per joint turn
	MotorConstant = 0.025 // kt, Nm/A at the motor
)

// Motor numbers and polarities of odri_control_interface's Solo12 configuration, in joint order.
var (
	motorNumbers    = [NumJoints]int{0, 3, 2, 1, 5, 4, 6, 9, 8, 7, 11, 10}
	reversePolarity = [NumJoints]bool{false, true, true, true, false, false, false, true, true, true, false, false}
	polarity        = func() (p [NumJoints]float64) {
		for j, r := range reversePolarity {
			p[j] = 1
			if r {
				p[j] = -1
			}
		}
		return p
	}()
)

// MotorNumbers returns odri_control_interface's motor_numbers for Solo12 in joint order.
func MotorNumbers() [NumJoints]int { return motorNumbers }

// ReversePolarities returns odri_control_interface's reverse_polarities for Solo12 in joint order.
func ReversePolarities() [NumJoints]bool { return reversePolarity }

// JointOfMotor returns the joint driven by master-board motor m, false if m is out of range.
func JointOfMotor(m int) (Joint, bool) {
	for j, n := range motorNumbers {
		if n == m {
			return Joint(j), true
		}
	}
	return 0, false
}

// Safety defaults of odri_control_interface for Solo12. The position limits are the real robot's,
// not the URDF's placeholders.
const (
	MaxCurrent       = 8.0  // A, the default i_sat of every motor
	MaxJointVelocity = 80.0 // rad/s
	SafetyDamping    = 0.2  // Nm*s/rad, the safety controller's Kd with zero refs and Kp = 0
)

var positionLimit = [JointsPerLeg]float64{HAA: 0.9, HFE: 1.45, KFE: 2.8}

// PositionLimits returns each joint's symmetric position limit in rad, in joint order.
func PositionLimits() (lim [NumJoints]float64) {
	for j := range lim {
		lim[j] = Joint(j).PositionLimit()
	}
	return lim
}

// Link ceilings in joint units: the largest Kp, Kd a command can carry on the wire for Solo12's
// drive train (about 5.16 Nm/rad and 0.62 Nm*s/rad), and the largest i_sat in A.
var (
	MaxJointKp = proto.MaxKp * GearRatio * GearRatio * MotorConstant
	MaxJointKd = proto.MaxKd * GearRatio * GearRatio * MotorConstant
	MaxISat    = proto.MaxISat
)

// JointSet is a set of joints, bit j for Joint(j).
type JointSet uint16

// AllJoints holds every joint.
const AllJoints JointSet = 1<<NumJoints - 1

// Has reports whether j is in s.
func (s JointSet) Has(j Joint) bool { return j.Valid() && s&(1<<j) != 0 }

// With returns s with j added.
func (s JointSet) With(j Joint) JointSet {
	if !j.Valid() {
		return s
	}
	return s | 1<<j
}

// Len is the number of joints in s.
func (s JointSet) Len() int {
	n := 0
	for x := s & AllJoints; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// String lists the joint names, e.g. "FL_HAA,HR_KFE", or "none".
func (s JointSet) String() string {
	if s&AllJoints == 0 {
		return "none"
	}
	var b strings.Builder
	for j := range Joint(NumJoints) {
		if s.Has(j) {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jointNames[j])
		}
	}
	return b.String()
}
