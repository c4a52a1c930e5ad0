package gait

import (
	"errors"
	"math"
)

// Leg geometry of Solo12 (solo12.md): hip (HAA) origins in the base frame, the lateral offset from
// the HAA axis to the foot (HFE 0.014 + KFE 0.03745 + foot 0.008), and the two 0.16 m segments.
const (
	hipX        = 0.1946
	hipY        = 0.0875
	legOffsetY  = 0.014 + 0.03745 + 0.008
	thighLength = 0.16
	shankLength = 0.16
	// FootRadius is the radius of the sphere at the end of each shank.
	FootRadius = 0.017
)

// Leg indices in the project's joint order.
const (
	FL = iota
	FR
	HL
	HR
	NumLegs
)

// side is +1 for left legs and -1 for right legs; front is +1 for front legs.
func side(leg int) float64 {
	if leg == FL || leg == HL {
		return 1
	}
	return -1
}

func front(leg int) float64 {
	if leg == FL || leg == FR {
		return 1
	}
	return -1
}

// Hip returns the HAA joint origin of a leg in the base frame.
func Hip(leg int) [3]float64 { return [3]float64{front(leg) * hipX, side(leg) * hipY, 0} }

// NominalFoot is where a foot stands under its hip for a base at height h above flat ground.
func NominalFoot(leg int, h float64) [3]float64 {
	hip := Hip(leg)
	return [3]float64{hip[0], hip[1] + side(leg)*legOffsetY, -(h - FootRadius)}
}

// FootPosition is the forward kinematics of one leg: the foot centre in the base frame.
func FootPosition(leg int, q [3]float64) [3]float64 {
	haa, hfe, kfe := q[0], q[1], q[2]
	x := -thighLength*math.Sin(hfe) - shankLength*math.Sin(hfe+kfe)
	zs := -thighLength*math.Cos(hfe) - shankLength*math.Cos(hfe+kfe)
	y0 := side(leg) * legOffsetY
	hip := Hip(leg)
	c, s := math.Cos(haa), math.Sin(haa)
	return [3]float64{hip[0] + x, hip[1] + y0*c - zs*s, hip[2] + y0*s + zs*c}
}

// ErrUnreachable reports a foot target outside the leg's workspace.
var ErrUnreachable = errors.New("gait: foot target out of the leg's reach")

// LegIK returns the joint angles (HAA, HFE, KFE) that put the foot of leg at p (base frame).
// Front knees bend backwards (KFE < 0) and hind knees forwards (KFE > 0), as in the default pose.
func LegIK(leg int, p [3]float64) ([3]float64, error) {
	hip := Hip(leg)
	x, y, z := p[0]-hip[0], p[1]-hip[1], p[2]-hip[2]
	y0 := side(leg) * legOffsetY
	r2 := y*y + z*z - y0*y0
	if r2 <= 0 {
		return [3]float64{}, ErrUnreachable
	}
	zs := -math.Sqrt(r2)
	haa := math.Atan2(z, y) - math.Atan2(zs, y0)
	haa = math.Remainder(haa, 2*math.Pi)

	d2 := x*x + zs*zs
	cosK := (d2 - thighLength*thighLength - shankLength*shankLength) / (2 * thighLength * shankLength)
	if cosK < -1 || cosK > 1 {
		return [3]float64{}, ErrUnreachable
	}
	kfe := math.Acos(cosK)
	if front(leg) > 0 {
		kfe = -kfe
	}
	phi := math.Atan2(-x, -zs)
	hfe := phi - math.Atan2(shankLength*math.Sin(kfe), thighLength+shankLength*math.Cos(kfe))
	return [3]float64{haa, hfe, kfe}, nil
}

// Reach limits of a clamped foot target (m from the hip): just short of the straight leg, where
// the knee angle is still defined, and at least minDepth below the hip, where the foot is clear
// of the HAA axis's lateral offset and a front (hind) leg can still fold behind (before) it.
const (
	maxReach = thighLength + shankLength - 0.002
	minDepth = 0.08
)

// ClampReach moves a foot target p (base frame) of leg into the leg's reach: down to minDepth
// below the hip if it is higher, then in towards the hip along the leg's plane to maxReach if it
// is further. A stretched or folded leg that points where the foot should be is a target the
// joints can track; a target within reach comes back unchanged.
func ClampReach(leg int, p [3]float64) [3]float64 {
	hip := Hip(leg)
	p[2] = min(p[2], hip[2]-minDepth)
	x, y, z := p[0]-hip[0], p[1]-hip[1], p[2]-hip[2]
	y0 := side(leg) * legOffsetY
	r2 := y*y + z*z - y0*y0
	if x*x+r2 <= maxReach*maxReach {
		return p
	}
	// Scale the leg's sagittal vector (x, zs) and turn it back about the HAA axis.
	k := maxReach / math.Sqrt(x*x+r2)
	zs := -math.Sqrt(r2)
	haa := math.Atan2(z, y) - math.Atan2(zs, y0)
	c, s := math.Cos(haa), math.Sin(haa)
	return [3]float64{hip[0] + k*x, hip[1] + y0*c - k*zs*s, hip[2] + y0*s + k*zs*c}
}

// LegJacobian is d(foot position)/d(q) of one leg, by central differences of FootPosition: the
// controller needs it only to pre-compensate gravity, where this accuracy is ample.
func LegJacobian(leg int, q [3]float64) (j [3][3]float64) {
	const h = 1e-6
	for c := range 3 {
		qp, qm := q, q
		qp[c] += h
		qm[c] -= h
		fp, fm := FootPosition(leg, qp), FootPosition(leg, qm)
		for r := range 3 {
			j[r][c] = (fp[r] - fm[r]) / (2 * h)
		}
	}
	return j
}
