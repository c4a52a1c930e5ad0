package solo12

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFootPositionKnownPoses(t *testing.T) {
	const lateral = 0.0875 + 0.014 + 0.03745 + 0.008
	stand := 0.16 * 2 * math.Cos(0.8)
	tests := []struct {
		name string
		leg  Leg
		q    [3]float64
		want [3]float64
	}{
		{"FL straight", FL, [3]float64{0, 0, 0}, [3]float64{0.1946, lateral, -0.32}},
		{"FR straight", FR, [3]float64{0, 0, 0}, [3]float64{0.1946, -lateral, -0.32}},
		{"HL straight", HL, [3]float64{0, 0, 0}, [3]float64{-0.1946, lateral, -0.32}},
		{"HR straight", HR, [3]float64{0, 0, 0}, [3]float64{-0.1946, -lateral, -0.32}},
		// The standing pose of solo12.md puts every foot under its hip.
		{"FL standing", FL, [3]float64{0, 0.8, -1.6}, [3]float64{0.1946, lateral, -stand}},
		{"HR standing", HR, [3]float64{0, -0.8, 1.6}, [3]float64{-0.1946, -lateral, -stand}},
		// HFE at +pi/2 swings a straight leg to -x (positive rotation about y turns -z into -x).
		{"FL thigh back", FL, [3]float64{0, math.Pi / 2, 0}, [3]float64{0.1946 - 0.32, lateral, 0}},
		// Knee folded flat: the shank comes back up along the thigh.
		{"FL knee folded", FL, [3]float64{0, 0, math.Pi}, [3]float64{0.1946, lateral, 0}},
		// HAA at +pi/2 about x: the leg's -z points along +y, its +y offset along +z.
		{"FL abducted", FL, [3]float64{math.Pi / 2, 0, 0}, [3]float64{0.1946, 0.0875 + 0.32, lateral - 0.0875}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.leg.FootPosition(tc.q)
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Fatalf("FootPosition = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestFootPositionMirrorSymmetry(t *testing.T) {
	// Right legs are left legs mirrored in the x-z plane (HAA flips sign), hind legs are front
	// legs shifted by -2*hipX.
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		q := [3]float64{rng.Float64()*1.8 - 0.9, rng.Float64()*2.9 - 1.45, rng.Float64()*5.6 - 2.8}
		fl := FL.FootPosition(q)
		fr := FR.FootPosition([3]float64{-q[0], q[1], q[2]})
		hl := HL.FootPosition(q)
		for i, pair := range [][2]float64{{fl[0], fr[0]}, {fl[1], -fr[1]}, {fl[2], fr[2]}, {fl[0] - 2*0.1946, hl[0]}, {fl[1], hl[1]}, {fl[2], hl[2]}} {
			if math.Abs(pair[0]-pair[1]) > 1e-12 {
				t.Fatalf("q %v: pair %d differs: %v", q, i, pair)
			}
		}
	}
}

func TestLegJacobianFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const h = 1e-6
	worst := 0.0
	for l := range Leg(NumLegs) {
		for range 500 {
			q := [3]float64{rng.Float64()*6 - 3, rng.Float64()*6 - 3, rng.Float64()*6 - 3}
			jac := l.Jacobian(q)
			for k := range 3 {
				qp, qm := q, q
				qp[k] += h
				qm[k] -= h
				pp, pm := l.FootPosition(qp), l.FootPosition(qm)
				for i := range 3 {
					fd := (pp[i] - pm[i]) / (2 * h)
					d := math.Abs(fd - jac[i][k])
					worst = max(worst, d)
					if d > 1e-8 {
						t.Fatalf("%v q %v: J[%d][%d] = %v, central difference %v", l, q, i, k, jac[i][k], fd)
					}
				}
			}
		}
	}
	t.Logf("largest |J - central difference| over 2000 random configurations: %.2g", worst)
}

func TestFootKinematicsVelocity(t *testing.T) {
	// Along a smooth joint trajectory, the foot velocity must be the time derivative of the foot
	// position.
	traj := func(tm float64) (q, qd [NumJoints]float64) {
		for j := range NumJoints {
			w, a := 1+0.3*float64(j), 0.2+0.05*float64(j%3)
			q[j] = a * math.Sin(w*tm+float64(j))
			qd[j] = a * w * math.Cos(w*tm+float64(j))
		}
		return q, qd
	}
	const h = 1e-6
	for _, tm := range []float64{0, 0.3, 1.7} {
		q, qd := traj(tm)
		var pos, vel, posP, posM, ignore [NumLegs][3]float64
		FootKinematics(&q, &qd, &pos, &vel)
		qp, qdp := traj(tm + h)
		qm, qdm := traj(tm - h)
		FootKinematics(&qp, &qdp, &posP, &ignore)
		FootKinematics(&qm, &qdm, &posM, &ignore)
		for l := range NumLegs {
			if pos[l] != Leg(l).FootPosition(Leg(l).Angles(&q)) {
				t.Fatalf("leg %d position differs from FootPosition", l)
			}
			for i := range 3 {
				fd := (posP[l][i] - posM[l][i]) / (2 * h)
				if math.Abs(fd-vel[l][i]) > 1e-8 {
					t.Fatalf("t %v leg %v axis %d: velocity %v, central difference %v", tm, Leg(l), i, vel[l][i], fd)
				}
			}
		}
	}
}

func TestFootKinematicsDoesNotAllocate(t *testing.T) {
	var q, qd [NumJoints]float64
	var pos, vel [NumLegs][3]float64
	if a := testing.AllocsPerRun(100, func() { FootKinematics(&q, &qd, &pos, &vel) }); a != 0 {
		t.Errorf("%v allocations per run", a)
	}
}
