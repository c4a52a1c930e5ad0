package sim

import (
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim/mujoco"
)

// Joint PD gains used across the tests: inside the link ceilings (5.16 Nm/rad, 0.62 Nm s/rad).
const (
	testKp = 5.0
	testKd = 0.15
)

type joints = [solo12.NumJoints]float64

// jointTarget is a joint-space PD+ command with one gain pair for all joints.
type jointTarget struct {
	Q, Qd, Tau joints
	Kp, Kd     float64
}

// jointDrive turns a joint-space PD+ command into motor drives through the real joint<->motor
// map (hw/solo12) of an uncalibrated robot (the plant's absolute rotor angles are p*N*q).
func jointDrive(tg *jointTarget, out *[NumMotors]board.MotorDrive) {
	var jc solo12.JointCommand
	jc.Q, jc.Qd, jc.Tau = tg.Q, tg.Qd, tg.Tau
	kp, kd := tg.Kp, tg.Kd
	for j := range jc.Kp {
		jc.Kp[j], jc.Kd[j], jc.ISat[j] = kp, kd, solo12.MaxCurrent
	}
	var c proto.Command
	var m solo12.Map
	m.WriteCommand(&jc, &c)
	for mo := range out {
		out[mo] = board.MotorDrive{Enabled: true, MotorCommand: *c.Motor(mo)}
	}
}

func newRobot(t testing.TB, cfg Config) *Robot {
	t.Helper()
	r, err := NewRobot(cfg)
	if err != nil {
		t.Fatalf("NewRobot: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// hold steps the robot for n periods with a constant joint PD+ command, calling each(k) after
// every step when each is non-nil.
func hold(t testing.TB, r *Robot, tg jointTarget, n int, each func(k int)) {
	t.Helper()
	var drive [NumMotors]board.MotorDrive
	jointDrive(&tg, &drive)
	for k := range n {
		if err := r.Step(&drive); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		if each != nil {
			each(k)
		}
	}
}

func rms(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x * x
	}
	return math.Sqrt(s / float64(len(xs)))
}

// standingFeedforward is the joint torque that holds the standing pose statically with a quarter
// of the robot's weight on each foot: tau = -(r x F) . axis for each joint, with the joint
// positions taken from the model's kinematics at the nominal pose (base level, so HAA axes are
// world x and HFE/KFE axes world y). The legs' own weight is neglected.
func standingFeedforward(t testing.TB, r *Robot) joints {
	t.Helper()
	if err := r.Reset(r.StartPose()); err != nil {
		t.Fatal(err)
	}
	w := r.World()
	pos := func(kind mujoco.ObjType, name string) [3]float64 {
		id, err := w.ID(kind, name)
		if err != nil {
			t.Fatal(err)
		}
		if kind == mujoco.ObjSite {
			return [3]float64(w.SiteXPos()[3*id:])
		}
		return [3]float64(w.XPos()[3*id:])
	}
	f := TotalMass * proto.StandardGravity / 4
	var tau joints
	for leg := range solo12.NumLegs {
		l := solo12.Leg(leg)
		foot := pos(mujoco.ObjSite, l.String()+"_FOOT")
		hip := pos(mujoco.ObjBody, l.String()+"_SHOULDER")
		hfe := pos(mujoco.ObjBody, l.String()+"_UPPER_LEG")
		knee := pos(mujoco.ObjBody, l.String()+"_LOWER_LEG")
		// (d x (0,0,f)).x = d.y*f ; (d x (0,0,f)).y = -d.x*f
		tau[l.Joint(solo12.HAA)] = -(foot[1] - hip[1]) * f
		tau[l.Joint(solo12.HFE)] = (foot[0] - hfe[0]) * f
		tau[l.Joint(solo12.KFE)] = (foot[0] - knee[0]) * f
	}
	return tau
}
