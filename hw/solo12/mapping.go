package solo12

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dualforce/dualforce/hw/proto"
)

// Map converts between joint quantities and the motor quantities of a proto.Command or
// proto.Sensor. The zero Map is an uncalibrated robot (all offsets 0).
type Map struct {
	// Offset is each joint's calibrated position offset in rad on the joint side:
	// q = p*theta/N + Offset. After index compensation it is the joint position of the index the
	// calibration found, so it is specific to one robot.
	Offset [NumJoints]float64
}

// JointState is what the motors report, in joint units.
type JointState struct {
	Q   [NumJoints]float64 // rad
	Qd  [NumJoints]float64 // rad/s
	Tau [NumJoints]float64 // Nm, from the measured current
}

// JointCommand is a PD+ reference per joint in joint units. The motor cards apply
// tau = Tau + Kp*(Q-q) + Kd*(Qd-qd), with the motor current saturated to ISat.
type JointCommand struct {
	Q    [NumJoints]float64 // rad
	Qd   [NumJoints]float64 // rad/s
	Tau  [NumJoints]float64 // Nm feed-forward
	Kp   [NumJoints]float64 // Nm/rad
	Kd   [NumJoints]float64 // Nm*s/rad
	ISat [NumJoints]float64 // A of motor current; 0 means no saturation
}

// gainScale turns a joint gain into a motor-side current gain: the error is N times larger on the
// motor side and a current produces N*kt of joint torque.
const gainScale = GearRatio * GearRatio * MotorConstant

// torquePerAmp is the joint torque per A of motor current.
const torquePerAmp = GearRatio * MotorConstant

// ReadSensor converts the motor readings of s into joint position, velocity and torque.
func (m *Map) ReadSensor(s *proto.Sensor, out *JointState) {
	for j := range NumJoints {
		p := polarity[j]
		pos, vel, cur := s.Motor(motorNumbers[j])
		out.Q[j] = p*pos/GearRatio + m.Offset[j]
		out.Qd[j] = p * vel / GearRatio
		out.Tau[j] = p * cur * torquePerAmp
	}
}

// WriteSensor is the inverse of ReadSensor, for a simulated robot that reports joint states as a
// board would. Status words and the rest of s are left alone.
func (m *Map) WriteSensor(in *JointState, s *proto.Sensor) {
	for j := range NumJoints {
		p := polarity[j]
		d := &s.Drivers[Joint(j).Driver()]
		port := Joint(j).Port()
		d.Position[port] = p * (in.Q[j] - m.Offset[j]) * GearRatio
		d.Velocity[port] = p * in.Qd[j] * GearRatio
		d.Current[port] = p * in.Tau[j] / torquePerAmp
	}
}

// WriteCommand fills the motor blocks of c from in; mode words and the rest of c are left alone.
// Gains and i_sat outside what the wire can carry are clamped into range (never wrapped) and
// reported in the returned warning; a zero warning means everything was sent as asked. NaN or Inf
// pass through untouched for c.Marshal to refuse.
func (m *Map) WriteCommand(in *JointCommand, c *proto.Command) GainWarning {
	var w GainWarning
	for j := range NumJoints {
		p := polarity[j]
		mc := c.Motor(motorNumbers[j])
		mc.PositionRef = p * (in.Q[j] - m.Offset[j]) * GearRatio
		mc.VelocityRef = p * in.Qd[j] * GearRatio
		mc.CurrentRef = p * in.Tau[j] / torquePerAmp
		var out bool
		mc.Kp, out = clampGain(in.Kp[j], MaxJointKp, proto.MaxKp, gainScale)
		w.Kp |= member(out, j)
		mc.Kd, out = clampGain(in.Kd[j], MaxJointKd, proto.MaxKd, gainScale)
		w.Kd |= member(out, j)
		mc.ISat, out = clampGain(in.ISat[j], MaxISat, proto.MaxISat, 1)
		w.ISat |= member(out, j)
	}
	return w
}

// clampGain converts a joint gain to the motor side, clamping it to [0, motorMax]. The range test
// is done in joint units so that a gain of exactly the published ceiling is not reported.
func clampGain(joint, jointMax, motorMax, scale float64) (float64, bool) {
	switch {
	case joint > jointMax:
		return motorMax, true
	case joint < 0:
		return 0, true
	}
	return min(joint/scale, motorMax), false
}

func member(in bool, j int) JointSet {
	if in {
		return 1 << j
	}
	return 0
}

// ReadCommand is the inverse of WriteCommand: the joint command that c's motor blocks carry, for a
// simulated robot, a recorder or a test.
func (m *Map) ReadCommand(c *proto.Command, out *JointCommand) {
	for j := range NumJoints {
		p := polarity[j]
		mc := c.Motor(motorNumbers[j])
		out.Q[j] = p*mc.PositionRef/GearRatio + m.Offset[j]
		out.Qd[j] = p * mc.VelocityRef / GearRatio
		out.Tau[j] = p * mc.CurrentRef * torquePerAmp
		out.Kp[j] = mc.Kp * gainScale
		out.Kd[j] = mc.Kd * gainScale
		out.ISat[j] = mc.ISat
	}
}

// ErrGainCeiling matches every non-zero GainWarning with errors.Is.
var ErrGainCeiling = errors.New("solo12: gain outside the range the link can carry")

// GainWarning names the joints whose Kp, Kd or i_sat WriteCommand had to clamp: above the link
// ceilings (MaxJointKp, MaxJointKd, MaxISat) or below zero. It is a value so that reporting it
// costs no allocation on the control path.
type GainWarning struct {
	Kp, Kd, ISat JointSet
}

// IsZero reports that nothing was clamped.
func (w GainWarning) IsZero() bool { return w == GainWarning{} }

// Err returns w as an error, or nil when nothing was clamped.
func (w GainWarning) Err() error {
	if w.IsZero() {
		return nil
	}
	return w
}

func (w GainWarning) Error() string {
	var b strings.Builder
	b.WriteString("solo12: gains clamped to the link range")
	for _, f := range [...]struct {
		set  JointSet
		name string
		max  float64
		unit string
	}{
		{w.Kp, "kp", MaxJointKp, "Nm/rad"},
		{w.Kd, "kd", MaxJointKd, "Nm*s/rad"},
		{w.ISat, "i_sat", MaxISat, "A"},
	} {
		if f.set != 0 {
			fmt.Fprintf(&b, "; %s of %v outside [0, %.4g %s]", f.name, f.set, f.max, f.unit)
		}
	}
	return b.String()
}

// Is makes errors.Is(w, ErrGainCeiling) true.
func (w GainWarning) Is(target error) bool { return target == ErrGainCeiling }

// IndexSeen is the set of joints whose motor has passed its encoder index since it was enabled.
func IndexSeen(s *proto.Sensor) JointSet {
	var set JointSet
	for j := range NumJoints {
		set |= member(s.Drivers[Joint(j).Driver()].Status.IndexSeen(Joint(j).Port()), j)
	}
	return set
}

// Ready is the set of joints whose motor is enabled and reports ready (rotor alignment done).
func Ready(s *proto.Sensor) JointSet {
	var set JointSet
	for j := range NumJoints {
		st := s.Drivers[Joint(j).Driver()].Status
		port := Joint(j).Port()
		set |= member(st.MotorEnabled(port) && st.MotorReady(port), j)
	}
	return set
}

// DriverFaults is the set of joints whose driver reports an error code.
func DriverFaults(s *proto.Sensor) JointSet {
	var set JointSet
	for j := range NumJoints {
		set |= member(s.Drivers[Joint(j).Driver()].Status.Error() != proto.ErrNone, j)
	}
	return set
}
