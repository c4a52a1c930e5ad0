package skills

import (
	"errors"
	"fmt"
)

// HardwareJointLimits are the real Solo12 joint limits (rad, symmetric): HAA
// +-0.9, HFE +-1.45, KFE +-2.8. A bank may narrow them, never widen them.
var HardwareJointLimits = [NumJoints]float32{
	0.9, 1.45, 2.8,
	0.9, 1.45, 2.8,
	0.9, 1.45, 2.8,
	0.9, 1.45, 2.8,
}

// StandingPose is the Solo12 standing pose: HAA 0, HFE +0.8 front / -0.8
// hind, KFE -1.6 front / +1.6 hind.
var StandingPose = [NumJoints]float32{
	0, 0.8, -1.6,
	0, 0.8, -1.6,
	0, -0.8, 1.6,
	0, -0.8, 1.6,
}

// ErrNonFiniteAction reports a NaN or Inf policy output. The affected joints
// are sent to their default pose, the others are mapped normally.
var ErrNonFiniteAction = errors.New("skills: non-finite action")

// ActionMap turns policy outputs into joint position targets:
// q* = DefaultPose + Scale * clip(a, -1, 1), clamped to [Lower, Upper].
type ActionMap struct {
	DefaultPose  [NumJoints]float32
	Scale        float32
	Lower, Upper [NumJoints]float32
}

// Validate checks the scale, that Lower < Upper within the hardware limits,
// and that the default pose lies inside them.
func (m ActionMap) Validate() error {
	if !(m.Scale > 0) || !finite32(m.Scale) {
		return fmt.Errorf("action scale %v must be positive and finite", m.Scale)
	}
	for j := range NumJoints {
		lo, hi, hw, q0 := m.Lower[j], m.Upper[j], HardwareJointLimits[j], m.DefaultPose[j]
		switch {
		case !finite32(lo) || !finite32(hi) || !(lo < hi):
			return fmt.Errorf("joint %s limits [%v, %v] are not an interval", JointNames[j], lo, hi)
		case lo < -hw || hi > hw:
			return fmt.Errorf("joint %s limits [%v, %v] exceed the hardware's +-%v rad", JointNames[j], lo, hi, hw)
		case !(q0 >= lo && q0 <= hi):
			return fmt.Errorf("joint %s default pose %v is outside [%v, %v]", JointNames[j], q0, lo, hi)
		}
	}
	return nil
}

// Targets writes the joint targets for action a into q (both len NumJoints).
func (m *ActionMap) Targets(a, q []float32) error {
	if len(a) != NumJoints || len(q) != NumJoints {
		return ErrDimMismatch
	}
	var err error
	for j := range NumJoints {
		v := a[j]
		if !finite32(v) {
			v, err = 0, ErrNonFiniteAction
		}
		v = min(max(v, -1), 1)
		q[j] = min(max(m.DefaultPose[j]+m.Scale*v, m.Lower[j]), m.Upper[j])
	}
	return err
}

// Actions is the inverse used when recording scripted behaviours: the action
// in [-1,1] whose target is closest to joint targets q.
func (m *ActionMap) Actions(q, a []float32) error {
	if len(a) != NumJoints || len(q) != NumJoints {
		return ErrDimMismatch
	}
	var err error
	for j := range NumJoints {
		v := (q[j] - m.DefaultPose[j]) / m.Scale
		if !finite32(v) {
			v, err = 0, ErrNonFiniteAction
		}
		a[j] = min(max(v, -1), 1)
	}
	return err
}
