package eval

import (
	"context"
	"math"
	"testing"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
)

// TestSkillsStartWhereEpisodesStart compares the first observation of every collected episode
// with the first observation a skill gets from the runtime: power-on, the core's stand-up and
// settle, then "run", as Evaluate does it. A policy cloned from episodes that start elsewhere
// (they once started 0.05 rad off at the hips, still moving) meets its first state off its
// data, at the one state where every gait has to begin.
func TestSkillsStartWhereEpisodesStart(t *testing.T) {
	plan, err := collect.NewPlan(collect.TaskLocomotion, collect.ScaleTest, 1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := collect.Collect(context.Background(), plan, collect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	layout := data.Offline.Manifest.Contract.Layout
	pos, _ := layout.Field(skills.FieldJointPos)
	vel, _ := layout.Field(skills.FieldJointVel)
	d := data.Offline.Data.ObsDim

	scenario, err := worlds.Builtin(plan.Task.World)
	if err != nil {
		t.Fatal(err)
	}
	bank := constantBank(t, [skills.NumJoints]float32{})
	rig, err := NewRig(bank, robotboard.Config{Scenario: scenario, Seed: 1}, func(c *core.Config) { c.StandUp = DefaultStandUp })
	if err != nil {
		t.Fatal(err)
	}
	defer rig.Close()
	r := &simRig{Rig: rig, t: t}
	r.standing()
	r.steps(int(DefaultSettle.Milliseconds()), nil)
	r.command(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeRun})
	r.until(100, "first policy step", func() bool { return rig.Driver.Output().PolicyTick })
	obs := rig.Driver.Output().Obs
	st := &bank.Contract.Normaliser
	runtimeObs := make([]float64, len(obs))
	for i, v := range obs {
		runtimeObs[i] = float64(v*max(st.Std[i], st.Epsilon) + st.Mean[i])
	}

	episodes, worstPos, worstVel := 0, 0.0, 0.0
	for i, start := range data.Offline.Data.EpisodeStart {
		if !start {
			continue
		}
		episodes++
		first := data.Offline.Data.Obs[i*d : (i+1)*d]
		for j := range skills.NumJoints {
			worstPos = math.Max(worstPos, math.Abs(float64(first[pos.Offset+j])-runtimeObs[pos.Offset+j]))
			worstVel = math.Max(worstVel, math.Abs(float64(first[vel.Offset+j])))
		}
	}
	t.Logf("runtime's first joint_pos %.3f", runtimeObs[pos.Offset:pos.Offset+skills.NumJoints])
	t.Logf("%d episodes: joint positions at most %.4f rad from the runtime's, joint speeds at most %.4f rad/s",
		episodes, worstPos, worstVel)
	if worstPos > 0.01 || worstVel > 0.05 {
		t.Errorf("episodes start up to %.4f rad from where the runtime starts a skill, moving up to %.4f rad/s; want within 0.01 rad, at rest",
			worstPos, worstVel)
	}
}
