package mujoco

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ballXML is a 1 kg ball of radius 0.1 m dropped onto a plane, a wall box to cast rays at,
// and a pendulum on a hinge driven by a motor, with a few sensors.
const ballXML = `<mujoco model="ball">
  <compiler angle="radian"/>
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="wall" type="box" pos="2 0 0.5" size="0.1 1 0.5" group="2"/>
    <body name="ball" pos="0 0 0.5">
      <freejoint name="free"/>
      <geom name="ball" type="sphere" size="0.1" mass="1"/>
      <site name="imu"/>
    </body>
    <body name="arm" pos="-2 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="0.1"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge"/></actuator>
  <sensor>
    <accelerometer name="acc" site="imu"/>
    <jointpos name="hingepos" joint="hinge"/>
  </sensor>
</mujoco>`

func loadBall(t testing.TB) *World {
	t.Helper()
	w, err := LoadXML([]byte(ballXML))
	if err != nil {
		t.Fatalf("LoadXML: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestLoadXMLSizes(t *testing.T) {
	w := loadBall(t)
	got := w.Sizes()
	want := Sizes{NQ: 8, NV: 7, NU: 1, NBody: 3, NJoint: 2, NGeom: 4, NSite: 1, NSensor: 2, NSensorData: 4, NConMax: got.NConMax}
	if got != want {
		t.Fatalf("Sizes = %+v, want %+v", got, want)
	}
	if dt := w.Timestep(); dt != 0.001 {
		t.Fatalf("Timestep = %g", dt)
	}
	if m := w.TotalMass(); math.Abs(m-1.1) > 1e-12 {
		t.Fatalf("TotalMass = %g, want 1.1", m)
	}
	if g := w.Gravity(); g != [3]float64{0, 0, -9.81} {
		t.Fatalf("Gravity = %v", g)
	}
	if !strings.HasPrefix(Version(), "2.") {
		t.Fatalf("Version = %q", Version())
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ball.xml")
	if err := os.WriteFile(path, []byte(ballXML), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	defer w.Close()
	if w.Sizes().NQ != 8 {
		t.Fatalf("nq = %d", w.Sizes().NQ)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		xml     string
		wantSub string
	}{
		{"empty", "", "empty XML"},
		{"not xml", "this is not xml", "XML"},
		{"unclosed", "<mujoco><worldbody>", "XML"},
		{"unknown element", `<mujoco><worldbody><bogus/></worldbody></mujoco>`, "bogus"},
		{"bad attribute value", `<mujoco><worldbody><geom type="sphere" size="abc"/></worldbody></mujoco>`, "size"},
		{"missing mesh file", `<mujoco><asset><mesh file="nope.stl"/></asset></mujoco>`, "nope.stl"},
		{"bad inertia", `<mujoco><worldbody><body><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 5"/></body></worldbody></mujoco>`, "inertia"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := LoadXML([]byte(tc.xml))
			if err == nil {
				w.Close()
				t.Fatal("LoadXML succeeded, want error")
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not *Error", err)
			}
			if !strings.Contains(err.Error(), tc.wantSub) {
				t.Fatalf("error %q does not mention %q", err, tc.wantSub)
			}
		})
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.xml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadFile(missing) = %v, want ErrNotExist", err)
	}
}

func TestFatalErrorIsReturnedNotExit(t *testing.T) {
	// A 200-number stack compiles but cannot hold the scratch data of a step with the ball
	// in contact with the floor: MuJoCo calls mju_error, which by default exits the process.
	xml := strings.Replace(ballXML, `<option timestep="0.001"/>`, `<option timestep="0.001"/><size nstack="200"/>`, 1)
	w, err := LoadXML([]byte(xml))
	if err != nil {
		t.Fatalf("LoadXML: %v", err)
	}
	defer w.Close()
	err = w.Step(1000)
	var me *Error
	if !errors.As(err, &me) || me.Op != "step" || !strings.Contains(me.Msg, "Stack overflow") {
		t.Fatalf("Step = %v, want a step *Error about the stack", err)
	}
	// The world stays usable for reading and closing after a recovered error.
	if err := w.Reset(); err != nil {
		t.Fatalf("Reset after error: %v", err)
	}
}

func TestDivergenceIsReported(t *testing.T) {
	w := loadBall(t)
	w.QVel()[0] = math.NaN()
	if err := w.Step(1); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Step with NaN velocity = %v, want ErrDiverged", err)
	}
	if v := w.QVel()[0]; v != 0 {
		t.Fatalf("qvel after divergence reset = %g, want 0", v)
	}
	if err := w.Step(10); err != nil {
		t.Fatalf("Step after reset: %v", err)
	}
}

func TestBallFallsAndRests(t *testing.T) {
	w := loadBall(t)
	ball, err := w.ID(ObjBody, "ball")
	if err != nil {
		t.Fatal(err)
	}
	// Free fall for 0.1 s: z = 0.5 - g t^2 / 2 (semi-implicit Euler is exact to O(dt)).
	if err := w.Step(100); err != nil {
		t.Fatal(err)
	}
	pos, quat, err := w.BodyPose(ball)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.5 - 0.5*9.81*0.01; math.Abs(pos[2]-want) > 1e-3 {
		t.Fatalf("z after 0.1 s = %g, want %g", pos[2], want)
	}
	if quat != [4]float64{1, 0, 0, 0} {
		t.Fatalf("quat = %v", quat)
	}
	if err := w.Step(2000); err != nil {
		t.Fatal(err)
	}
	if z := w.QPos()[2]; math.Abs(z-0.1) > 2e-3 {
		t.Fatalf("resting z = %g, want 0.1", z)
	}
	acc, _ := w.ID(ObjSensor, "acc")
	adr, dim, err := w.SensorAddr(acc)
	if err != nil || dim != 3 {
		t.Fatalf("SensorAddr = %d %d %v", adr, dim, err)
	}
	if az := w.SensorData()[adr+2]; math.Abs(az-9.81) > 0.05 {
		t.Fatalf("accelerometer z at rest = %g, want +9.81", az)
	}
	floor, _ := w.ID(ObjGeom, "floor")
	ballGeom, _ := w.ID(ObjGeom, "ball")
	found := false
	for i := range w.NumContacts() {
		c, err := w.Contact(i)
		if err != nil {
			t.Fatal(err)
		}
		if c.Geom1 == floor && c.Geom2 == ballGeom {
			found = true
			f, err := w.ContactForce(i)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(f[0]-9.81) > 0.1 {
				t.Fatalf("normal force = %g N, want 9.81", f[0])
			}
		}
	}
	if !found {
		t.Fatalf("no floor-ball contact among %d", w.NumContacts())
	}
	if _, err := w.Contact(w.NumContacts()); err == nil {
		t.Fatal("Contact out of range succeeded")
	}
}

func TestActuatorDrivesHinge(t *testing.T) {
	w := loadBall(t)
	hinge, _ := w.ID(ObjJoint, "hinge")
	qa, da, err := w.JointAddr(hinge)
	if err != nil || qa != 7 || da != 6 {
		t.Fatalf("JointAddr = %d %d %v", qa, da, err)
	}
	lo, hi, _ := w.JointRange(hinge)
	if lo != -1 || hi != 1 {
		t.Fatalf("range = %g %g", lo, hi)
	}
	w.Ctrl()[0] = 0.05
	if err := w.Step(100); err != nil {
		t.Fatal(err)
	}
	if q := w.QPos()[qa]; q <= 0 {
		t.Fatalf("hinge angle after positive torque = %g", q)
	}
	w.Ctrl()[0] = 0
	w.QfrcApplied()[da] = -0.2
	if err := w.Step(300); err != nil {
		t.Fatal(err)
	}
	if q := w.QPos()[qa]; q >= 0 {
		t.Fatalf("hinge angle after negative applied force = %g", q)
	}
}

func TestRay(t *testing.T) {
	w := loadBall(t)
	if err := w.Forward(); err != nil {
		t.Fatal(err)
	}
	wall, _ := w.ID(ObjGeom, "wall")
	floor, _ := w.ID(ObjGeom, "floor")
	ball, _ := w.ID(ObjBody, "ball")
	only := func(g int) *[6]bool { var s [6]bool; s[g] = true; return &s }
	tests := []struct {
		name     string
		pnt, vec [3]float64
		filter   RayFilter
		dist     float64
		geom     int
	}{
		{"wall face", [3]float64{0, 0, 0.5}, [3]float64{1, 0, 0}, RayFilter{ExcludeBody: ball}, 1.9, wall},
		{"scaled direction", [3]float64{0, 0, 0.5}, [3]float64{2, 0, 0}, RayFilter{ExcludeBody: ball}, 0.95, wall},
		{"floor", [3]float64{1, 1, 3}, [3]float64{0, 0, -1}, RayFilter{ExcludeBody: -1}, 3, floor},
		{"group filter skips wall", [3]float64{0, 0, 0.5}, [3]float64{1, 0, 0}, RayFilter{Groups: only(0), ExcludeBody: ball}, -1, -1},
		{"static skipped", [3]float64{1, 1, 3}, [3]float64{0, 0, -1}, RayFilter{SkipStatic: true, ExcludeBody: -1}, -1, -1},
		{"hits the ball", [3]float64{0, 0, 3}, [3]float64{0, 0, -1}, RayFilter{ExcludeBody: -1}, 2.4, -2},
		{"misses upward", [3]float64{0, 3, 3}, [3]float64{0, 0, 1}, RayFilter{ExcludeBody: -1}, -1, -1},
	}
	ballGeom, _ := w.ID(ObjGeom, "ball")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, g := w.Ray(tc.pnt, tc.vec, tc.filter)
			want := tc.geom
			if want == -2 {
				want = ballGeom
			}
			if math.Abs(d-tc.dist) > 1e-9 || g != want {
				t.Fatalf("Ray = %g geom %d, want %g geom %d", d, g, tc.dist, want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { w.Ray([3]float64{0, 0, 0.5}, [3]float64{1, 0, 0}, RayFilter{ExcludeBody: -1}) }); n != 0 {
		t.Fatalf("Ray allocates %v times", n)
	}
}

func TestIDAndRangeErrors(t *testing.T) {
	w := loadBall(t)
	if _, err := w.ID(ObjBody, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ID(nope) = %v", err)
	}
	if _, _, err := w.BodyPose(99); err == nil {
		t.Fatal("BodyPose(99) succeeded")
	}
	if _, _, err := w.JointAddr(-1); err == nil {
		t.Fatal("JointAddr(-1) succeeded")
	}
	if _, _, err := w.SensorAddr(2); err == nil {
		t.Fatal("SensorAddr(2) succeeded")
	}
	if _, err := w.GeomBody(4); err == nil {
		t.Fatal("GeomBody(4) succeeded")
	}
	if err := w.SetTimestep(math.NaN()); err == nil {
		t.Fatal("SetTimestep(NaN) succeeded")
	}
}

func TestClose(t *testing.T) {
	w, err := LoadXML([]byte(ballXML))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Step(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Step after Close = %v", err)
	}
	if err := w.Forward(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Forward after Close = %v", err)
	}
	if w.QPos() != nil || w.Sizes() != (Sizes{}) || w.NumContacts() != 0 {
		t.Fatal("closed world still exposes state")
	}
	if d, g := w.Ray([3]float64{}, [3]float64{0, 0, -1}, RayFilter{}); d != -1 || g != -1 {
		t.Fatal("ray on closed world hit something")
	}
}

// Worlds on separate goroutines are independent and deterministic.
func TestWorldsOnGoroutinesMatch(t *testing.T) {
	run := func() []float64 {
		w, err := LoadXML([]byte(ballXML))
		if err != nil {
			t.Error(err)
			return nil
		}
		defer w.Close()
		w.QVel()[0] = 0.3
		w.Ctrl()[0] = 0.01
		if err := w.Step(1500); err != nil {
			t.Error(err)
		}
		return append([]float64(nil), w.QPos()...)
	}
	want := run()
	var wg sync.WaitGroup
	got := make([][]float64, 4)
	for i := range got {
		wg.Go(func() { got[i] = run() })
	}
	wg.Wait()
	for i, g := range got {
		for k := range want {
			if g[k] != want[k] {
				t.Fatalf("goroutine %d qpos[%d] = %v, want %v (bit-identical)", i, k, g[k], want[k])
			}
		}
	}
}
