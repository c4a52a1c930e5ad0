package solo12

import "math"

// Leg geometry of solo12.md for the front-left leg; y flips for right legs, x for hind legs.
const (
	hipX        = 0.1946  // base -> HAA axis, x
	hipY        = 0.0875  // base -> HAA axis, y
	hfeY        = 0.014   // shoulder -> HFE axis, y
	kfeY        = 0.03745 // upper leg -> KFE axis, y
	footY       = 0.008   // lower leg -> foot, y
	thighLength = 0.16    // HFE -> KFE along the upper leg's -z
	shankLength = 0.16    // KFE -> foot along the lower leg's -z
	// legOffsetY is the foot's constant lateral distance from the HAA axis in the shoulder frame:
	// HFE and KFE turn about y, so they never change it.
	legOffsetY = hfeY + kfeY + footY
)

// FootRadius is the radius of the foot sphere, whose centre FootPosition returns.
const FootRadius = 0.017

// sides returns +1 for a front leg and -1 for a hind one, and +1 for a left leg and -1 for a right one.
func (l Leg) sides() (front, left float64) {
	front, left = 1, 1
	if l == HL || l == HR {
		front = -1
	}
	if l == FR || l == HR {
		left = -1
	}
	return front, left
}

// Angles picks leg l's (HAA, HFE, KFE) out of a joint-ordered vector.
func (l Leg) Angles(q *[NumJoints]float64) [JointsPerLeg]float64 {
	i := int(l) * JointsPerLeg
	return [JointsPerLeg]float64{q[i], q[i+1], q[i+2]}
}

// PositionAndJacobian returns FootPosition and Jacobian together, sharing the trigonometry.
func (l Leg) PositionAndJacobian(q [JointsPerLeg]float64) (pos [3]float64, jac [3][JointsPerLeg]float64) {
	front, left := l.sides()
	s1, c1 := math.Sincos(q[0])
	s2, c2 := math.Sincos(q[1])
	s23, c23 := math.Sincos(q[1] + q[2])
	// The foot in the shoulder frame, which only HFE and KFE move: x forward, z down the leg, y
	// the constant lateral offset. HAA then turns (y, z) about x.
	x := -thighLength*s2 - shankLength*s23
	z := -thighLength*c2 - shankLength*c23
	y := left * legOffsetY
	pos = [3]float64{front*hipX + x, left*hipY + y*c1 - z*s1, y*s1 + z*c1}
	// dx/dHFE = z and dz/dHFE = -x (the foot turns about the HFE axis); the knee moves only the
	// shank's share.
	dxKnee, dzKnee := -shankLength*c23, shankLength*s23
	jac = [3][JointsPerLeg]float64{
		{0, z, dxKnee},
		{-y*s1 - z*c1, x * s1, -dzKnee * s1},
		{y*c1 - z*s1, -x * c1, dzKnee * c1},
	}
	return pos, jac
}

// FootPosition is the centre of leg l's foot sphere in the base frame (m) at the leg's joint angles
// q = (HAA, HFE, KFE): HAA turns about the base x axis, HFE and KFE about y.
func (l Leg) FootPosition(q [JointsPerLeg]float64) [3]float64 {
	pos, _ := l.PositionAndJacobian(q)
	return pos
}

// Jacobian is d FootPosition / d q for leg l: row i is the foot's base-frame coordinate i, column k
// the joint (HAA, HFE, KFE). The foot velocity is Jacobian * qd.
func (l Leg) Jacobian(q [JointsPerLeg]float64) [3][JointsPerLeg]float64 {
	_, jac := l.PositionAndJacobian(q)
	return jac
}

// FootVelocity is the foot centre's velocity in the base frame for joint velocities qd.
func (l Leg) FootVelocity(q, qd [JointsPerLeg]float64) [3]float64 {
	return mulVec(l.Jacobian(q), qd)
}

func mulVec(m [3][JointsPerLeg]float64, v [JointsPerLeg]float64) [3]float64 {
	var out [3]float64
	for i := range out {
		out[i] = m[i][0]*v[0] + m[i][1]*v[1] + m[i][2]*v[2]
	}
	return out
}

// FootKinematics fills every leg's foot position and velocity in the base frame from the joint
// positions and velocities, for leg odometry.
func FootKinematics(q, qd *[NumJoints]float64, pos, vel *[NumLegs][3]float64) {
	for l := range Leg(NumLegs) {
		p, jac := l.PositionAndJacobian(l.Angles(q))
		pos[l] = p
		vel[l] = mulVec(jac, l.Angles(qd))
	}
}
