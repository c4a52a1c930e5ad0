package estimator

import (
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
)

var standing = [solo12.NumJoints]float64{0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6}

// plantedJoints returns the joint state of a robot standing in pose q whose base moves at v
// (base frame) with all four feet planted and each carrying a quarter of the weight.
func plantedJoints(t *testing.T, q [solo12.NumJoints]float64, v [3]float64) solo12.JointState {
	t.Helper()
	js := solo12.JointState{Q: q}
	for leg := range solo12.NumLegs {
		l := solo12.Leg(leg)
		_, jac := l.PositionAndJacobian(l.Angles(&q))
		// foot velocity in the base frame is -v: solve J qd = -v.
		qd, ok := solve(jac, [3]float64{-v[0], -v[1], -v[2]})
		if !ok {
			t.Fatal("singular leg")
		}
		push := [3]float64{0, 0, -2.5 * 9.81 / 4} // force the foot puts on the ground
		for k := range 3 {
			j := l.Joint(solo12.JointKind(k))
			js.Qd[j] = qd[k]
			js.Tau[j] = jac[0][k]*push[0] + jac[1][k]*push[1] + jac[2][k]*push[2]
		}
	}
	return js
}

func solve(a [3][3]float64, b [3]float64) ([3]float64, bool) {
	// a x = b  <=>  (a^T)^T x = b: reuse solveTransposed on a^T.
	at := [3][3]float64{{a[0][0], a[1][0], a[2][0]}, {a[0][1], a[1][1], a[2][1]}, {a[0][2], a[1][2], a[2][2]}}
	return solveTransposed(at, b)
}

func atRest() proto.IMU { return proto.IMU{Accelerometer: [3]float64{0, 0, proto.StandardGravity}} }

func TestConvergesToOdometryVelocity(t *testing.T) {
	tests := []struct {
		name string
		v    [3]float64
	}{
		{"still", [3]float64{}},
		{"forward", [3]float64{0.4, 0, 0}},
		{"sideways and back", [3]float64{-0.2, 0.15, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			js := plantedJoints(t, standing, tt.v)
			imu := atRest()
			for range 500 {
				e.Update(&imu, &js, 0.001)
			}
			st := e.State()
			for i := range 3 {
				if math.Abs(st.LinVel[i]-tt.v[i]) > 1e-3 {
					t.Fatalf("velocity %v, want %v", st.LinVel, tt.v)
				}
			}
			if st.StanceFeet != 4 || !st.Contact[0] {
				t.Fatalf("stance feet %d contact %v", st.StanceFeet, st.Contact)
			}
			if g := st.ProjectedGravity; math.Abs(g[2]+1) > 1e-12 {
				t.Fatalf("projected gravity %v", g)
			}
		})
	}
}

func TestUnloadedFeetAreNotTrusted(t *testing.T) {
	e, _ := New(DefaultConfig())
	js := plantedJoints(t, standing, [3]float64{0.5, 0, 0})
	js.Tau = [solo12.NumJoints]float64{} // legs in the air
	imu := atRest()
	for range 100 {
		e.Update(&imu, &js, 0.001)
	}
	if st := e.State(); st.StanceFeet != 0 || st.LinVel != [3]float64{} {
		t.Fatalf("flight phase used odometry: %+v", st)
	}
}

func TestIntegratesIMUBetweenContacts(t *testing.T) {
	e, _ := New(DefaultConfig())
	var js solo12.JointState
	js.Q = standing
	// 1 m/s^2 forward for 100 ms with no foot on the ground: v = 0.1 m/s.
	imu := atRest()
	imu.Accelerometer[0] = 1
	for range 100 {
		e.Update(&imu, &js, 0.001)
	}
	if v := e.State().LinVel[0]; math.Abs(v-0.1) > 1e-9 {
		t.Fatalf("integrated velocity %v", v)
	}
}

func TestAttitudeToProjectedGravity(t *testing.T) {
	e, _ := New(DefaultConfig())
	var js solo12.JointState
	js.Q = standing
	imu := atRest()
	imu.Attitude = [3]float64{0.3, -0.2, 1.0}
	e.Update(&imu, &js, 0.001)
	g := e.State().ProjectedGravity
	// Rotate world down (0,0,-1) into the base frame by hand: R^T e with R = Rz Ry Rx.
	r, p := 0.3, -0.2
	want := [3]float64{math.Sin(p), -math.Cos(p) * math.Sin(r), -math.Cos(p) * math.Cos(r)}
	for i := range 3 {
		if math.Abs(g[i]-want[i]) > 1e-12 {
			t.Fatalf("projected gravity %v, want %v", g, want)
		}
	}
}

func TestUpdateDoesNotAllocate(t *testing.T) {
	e, _ := New(DefaultConfig())
	js := plantedJoints(t, standing, [3]float64{0.3, 0, 0})
	imu := atRest()
	if n := testing.AllocsPerRun(100, func() { e.Update(&imu, &js, 0.001) }); n != 0 {
		t.Fatalf("%v allocs per update", n)
	}
}

func TestBadConfig(t *testing.T) {
	c := DefaultConfig()
	c.CorrectionHz = 0
	if _, err := New(c); err == nil {
		t.Fatal("zero correction accepted")
	}
}

func BenchmarkUpdate(b *testing.B) {
	e, _ := New(DefaultConfig())
	var js solo12.JointState
	js.Q = standing
	imu := atRest()
	b.ReportAllocs()
	for b.Loop() {
		e.Update(&imu, &js, 0.001)
	}
}
