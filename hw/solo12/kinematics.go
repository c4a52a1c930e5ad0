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

// sagittal returns the foot's x and z in the shoulder frame (which only HFE and KFE move) and
// sin, cos of HFE+KFE.
func sagittal(q [JointsPerLeg]float64) (x, z, s23, c23 float64) {
	s2, c2 := math.Sincos(q[1])
	s23, c23 = math.Sincos(q[1] + q[2])
	return -thighLength*s2 - shankLength*s23, -thighLength*c2 - shankLength*c23, s23, c23
}

// FootPosition is the centre of leg l's foot sphere in the base frame (m) at the leg's joint angles
// q = (HAA, HFE, KFE): HAA turns about the base x axis, HFE and KFE about y.
func (l Leg) FootPosition(q [JointsPerLeg]float64) [3]float64 {
	front, left := l.sides()
	x, z, _, _ := sagittal(q)
	y := left * legOffsetY
	s1, c1 := math.Sincos(q[0])
	return [3]float64{
		front*hipX + x,
		left*hipY + y*c1 - z*s1,
		y*s1 + z*c1,
	}
}

// Jacobian is d FootPosition / d q for leg l: row i is the foot's base-frame coordinate i, column k
// the joint (HAA, HFE, KFE). The foot velocity is Jacobian * qd.
func (l Leg) Jacobian(q [JointsPerLeg]float64) [3][JointsPerLeg]float64 {
	_, left := l.sides()
	x, z, s23, c23 := sagittal(q)
	y := left * legOffsetY
	s1, c1 := math.Sincos(q[0])
	// In the shoulder frame dx/dHFE = z, dz/dHFE = -x (the foot turns about the HFE axis), and the
	// knee only moves the shank's share.
	dxKnee, dzKnee := -shankLength*c23, shankLength*s23
	return [3][JointsPerLeg]float64{
		{0, z, dxKnee},
		{-y*s1 - z*c1, x * s1, -dzKnee * s1},
		{y*c1 - z*s1, -x * c1, dzKnee * c1},
	}
}

// FootVelocity is the foot centre's velocity in the base frame for joint velocities qd.
func (l Leg) FootVelocity(q, qd [JointsPerLeg]float64) [3]float64 {
	jac := l.Jacobian(q)
	var v [3]float64
	for i := range v {
		v[i] = jac[i][0]*qd[0] + jac[i][1]*qd[1] + jac[i][2]*qd[2]
	}
	return v
}

// FootKinematics fills every leg's foot position and velocity in the base frame from the joint
// positions and velocities, for leg odometry.
func FootKinematics(q, qd *[NumJoints]float64, pos, vel *[NumLegs][3]float64) {
	for l := range Leg(NumLegs) {
		ql := l.Angles(q)
		pos[l] = l.FootPosition(ql)
		vel[l] = l.FootVelocity(ql, l.Angles(qd))
	}
}
