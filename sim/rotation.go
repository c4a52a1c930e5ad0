package sim

import "math"

// quatFromRPY converts Z-Y-X Euler angles (roll about x, then pitch about y, then yaw about z,
// applied as R = Rz(yaw) Ry(pitch) Rx(roll)) to a unit quaternion (w, x, y, z).
func quatFromRPY(rpy [3]float64) [4]float64 {
	cr, sr := math.Cos(rpy[0]/2), math.Sin(rpy[0]/2)
	cp, sp := math.Cos(rpy[1]/2), math.Sin(rpy[1]/2)
	cy, sy := math.Cos(rpy[2]/2), math.Sin(rpy[2]/2)
	return [4]float64{
		cr*cp*cy + sr*sp*sy,
		sr*cp*cy - cr*sp*sy,
		cr*sp*cy + sr*cp*sy,
		cr*cp*sy - sr*sp*cy,
	}
}

// rotFromQuat returns the row-major rotation matrix (base to world) of a quaternion, which need
// not be exactly unit.
func rotFromQuat(q [4]float64) [9]float64 {
	n := q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3]
	if n == 0 {
		return [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	}
	s := 2 / n
	w, x, y, z := q[0], q[1], q[2], q[3]
	return [9]float64{
		1 - s*(y*y+z*z), s * (x*y - w*z), s * (x*z + w*y),
		s * (x*y + w*z), 1 - s*(x*x+z*z), s * (y*z - w*x),
		s * (x*z - w*y), s * (y*z + w*x), 1 - s*(x*x+y*y),
	}
}

// rpyFromRot extracts Z-Y-X Euler angles from a rotation matrix.
func rpyFromRot(r *[9]float64) (roll, pitch, yaw float64) {
	roll = math.Atan2(r[7], r[8])
	pitch = math.Asin(max(-1, min(1, -r[6])))
	yaw = math.Atan2(r[3], r[0])
	return roll, pitch, yaw
}

// wrapAngle maps an angle to [-pi, pi).
func wrapAngle(a float64) float64 {
	a = math.Mod(a+math.Pi, 2*math.Pi)
	if a < 0 {
		a += 2 * math.Pi
	}
	return a - math.Pi
}
