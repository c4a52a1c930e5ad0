package collect

import (
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/skills"
)

// Observations come from the robot's own sensing through the runtime's path (wire codec, joint
// map, estimator, perception, skills.Builder): each field agrees with simulator ground truth to
// within what that path loses (wire quantisation, the estimator's error), and the task fields
// are the task's.
func TestObservationsFollowTheRuntimePath(t *testing.T) {
	p := plan(t, TaskNavigation, 12, map[string]int{"over": 1})
	ep := p.episode(2, 0)
	e, err := newEnv(ep.layout, &p.Contract)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	ctrl, err := behave.New(ep.spec, e.actions, ep.layout, ep.rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.reset(e.robot.StartPose(), settleTicks); err != nil {
		t.Fatal(err)
	}
	l := p.Contract.Layout
	field := func(obs []float32, name string) []float32 {
		f, ok := l.Field(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		return obs[f.Offset : f.Offset+f.Dim]
	}
	obs := make([]float32, l.Dim())
	goal := p.Task.Goal(ep.layout)
	var prev [skills.NumJoints]float32
	var worst struct{ q, qd, gyro, gravity, target, height float64 }
	var velErr2 float64
	const steps = 300
	for k := range steps {
		base := e.robot.Base()
		st := behave.StateOf(&base, float64(k)*behave.PolicyPeriod)
		tk := task{goal: goal, remaining: p.Task.EpisodeSeconds - st.Time}
		if err := e.observe(&tk, &prev, obs); err != nil {
			t.Fatal(err)
		}
		var q, qd [solo12.NumJoints]float64
		e.robot.Joints(&q, &qd)
		for j := range q {
			worst.q = max(worst.q, math.Abs(float64(field(obs, skills.FieldJointPos)[j]+skills.StandingPose[j])-q[j]))
			worst.qd = max(worst.qd, math.Abs(float64(field(obs, skills.FieldJointVel)[j])-qd[j]))
		}
		rpy := st.RPY
		sr, cr := math.Sincos(rpy[0])
		sp, cp := math.Sincos(rpy[1])
		wantGravity := [3]float64{sp, -cp * sr, -cp * cr}
		for i := range 3 {
			worst.gyro = max(worst.gyro, math.Abs(float64(field(obs, skills.FieldBaseAngVel)[i])-base.AngVel[i]))
			worst.gravity = max(worst.gravity, math.Abs(float64(field(obs, skills.FieldProjectedGravity)[i])-wantGravity[i]))
			d := float64(field(obs, skills.FieldBaseLinVel)[i]) - st.LinVel[i]
			velErr2 += d * d / 3
		}
		wantTarget := skills.EncodeTarget(goal[0]-st.Pos[0], goal[1]-st.Pos[1], rpy[2], goal[2])
		for i, v := range field(obs, skills.FieldTarget) {
			worst.target = max(worst.target, math.Abs(float64(v-wantTarget[i])))
		}
		if behave.TerrainHeight(ep.layout, st.Pos[0], st.Pos[1]) == 0 {
			// The centre of the grid is the ground under the base.
			centre := float64(field(obs, skills.FieldHeightMap)[skills.HeightMapPoints/2])
			worst.height = max(worst.height, math.Abs(centre+st.Pos[2]))
		}
		if got, want := field(obs, skills.FieldPreviousAction), prev; [skills.NumJoints]float32(got) != want {
			t.Fatalf("step %d: previous_action %v, want the last action %v", k, got, want)
		}
		if got, want := field(obs, skills.FieldRemainingTime)[0], float32(1-st.Time/p.Task.EpisodeSeconds); math.Abs(float64(got-want)) > 1e-6 {
			t.Fatalf("step %d: remaining_time %v, want %v", k, got, want)
		}
		var a [skills.NumJoints]float32
		if err := ctrl.Act(&st, &a); err != nil {
			t.Fatal(err)
		}
		if err := e.step(&a); err != nil {
			t.Fatal(err)
		}
		prev = a
	}
	velRMS := math.Sqrt(velErr2 / steps)
	t.Logf("worst |obs - truth|: joint_pos %.2g rad, joint_vel %.2g rad/s, base_ang_vel %.2g rad/s, projected_gravity %.2g, target %.2g, height_map centre %.2g m; base_lin_vel RMS error %.3f m/s (estimator)",
		worst.q, worst.qd, worst.gyro, worst.gravity, worst.target, worst.height, velRMS)
	for _, c := range []struct {
		name     string
		got, tol float64
	}{
		{"joint_pos", worst.q, 1e-5}, {"joint_vel", worst.qd, 0.012}, // two wire LSBs: the codec reads +-1 LSB of dither as 0
		{"base_ang_vel", worst.gyro, 1e-3},
		{"projected_gravity", worst.gravity, 1e-3}, {"target", worst.target, 1e-5}, {"height_map", worst.height, 1e-3},
		{"base_lin_vel RMS", velRMS, 0.1},
	} {
		if !(c.got <= c.tol) {
			t.Errorf("%s differs from ground truth by %.3g, want at most %.3g", c.name, c.got, c.tol)
		}
	}
	if worst.q == 0 || worst.gyro == 0 {
		t.Error("observations equal ground truth exactly: they did not go through the wire's quantisation")
	}
}

// A new policy target reaches the wire at the runtime's slew rate, one link tick at a time.
func TestTargetsAreSlewed(t *testing.T) {
	p := plan(t, TaskLocomotion, 1, map[string]int{"expert": 1})
	ep := p.episode(0, 0)
	e, err := newEnv(ep.layout, &p.Contract)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	if err := e.reset(e.robot.StartPose(), settleTicks); err != nil {
		t.Fatal(err)
	}
	var a [skills.NumJoints]float32
	for j := range a {
		a[j] = 1
	}
	if err := e.step(&a); err != nil {
		t.Fatal(err)
	}
	var sent solo12.JointCommand
	e.jmap.ReadCommand(&e.cmd, &sent)
	var target [skills.NumJoints]float32
	if err := e.actions.Targets(a[:], target[:]); err != nil {
		t.Fatal(err)
	}
	moved := maxTargetRate * sim.ControlPeriod * float64(e.ticks) // 0.6 rad in one policy step
	for j := range sent.Q {
		want := min(float64(skills.StandingPose[j])+moved, float64(target[j]))
		if math.Abs(sent.Q[j]-want) > 1e-6 || e.target[j] != float64(target[j]) {
			t.Fatalf("joint %d: commanded %.4f, target %.4f; want %.4f on the way to %.4f", j, sent.Q[j], e.target[j], want, target[j])
		}
		if sent.Kp[j] != Kp || math.Abs(sent.Kd[j]-Kd) > 1e-12 {
			t.Fatalf("joint %d gains %v / %v", j, sent.Kp[j], sent.Kd[j])
		}
	}
}
