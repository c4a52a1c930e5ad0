package eval

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/rig"
)

// A collected episode starts where a skill started by the runtime starts: the first joint
// positions of every episode of both tasks are within 0.005 rad of the first observation a
// bank's skill gets from the runtime core (power-on, stand-up, settle, "run", as Evaluate does
// it). Episodes once started 0.05 rad off at the hips, still moving, when the collector had its
// own copy of the robot's bring-up.
func TestEpisodesStartWhereSkillsStart(t *testing.T) {
	for _, task := range []string{collect.TaskLocomotion, collect.TaskNavigation} {
		t.Run(task, func(t *testing.T) {
			p, err := collect.NewPlan(task, collect.ScaleTest, 1)
			if err != nil {
				t.Fatal(err)
			}
			p.Task.EpisodeSeconds = 0.1
			for i := range p.Modes {
				p.Modes[i].Transitions = 0
				if p.Modes[i].Expert || p.Modes[i].Name == "random" {
					p.Modes[i].Transitions = 2 * 5
				}
			}
			data, err := collect.Collect(context.Background(), p, collect.Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			first := runtimeFirstObservation(t, p)
			pos, _ := p.Contract.Layout.Field(skills.FieldJointPos)
			d := data.Offline.Data.ObsDim
			episodes, worst := 0, 0.0
			for i, start := range data.Offline.Data.EpisodeStart {
				if !start {
					continue
				}
				episodes++
				obs := data.Offline.Data.Obs[i*d : (i+1)*d]
				for j := range skills.NumJoints {
					worst = max(worst, math.Abs(float64(obs[pos.Offset+j]-first[pos.Offset+j])))
				}
			}
			t.Logf("%d episodes: first joint positions at most %.2g rad from the runtime's %.3f",
				episodes, worst, first[pos.Offset:pos.Offset+skills.NumJoints])
			if episodes == 0 || worst > 0.005 {
				t.Errorf("%d episodes start up to %.4f rad from where the runtime starts a skill; want within 0.005", episodes, worst)
			}
		})
	}
}

// runtimeFirstObservation is the raw first observation a constant skill under p's contract gets
// from the core in p's world.
func runtimeFirstObservation(t *testing.T, p *collect.Plan) []float32 {
	t.Helper()
	scenario, err := worlds.Builtin(p.Task.World)
	if err != nil {
		t.Fatal(err)
	}
	bank := skillstest.Constant(t, p.Contract, [skills.NumJoints]float32{})
	r, err := rig.New(bank, robotboard.Config{Scenario: scenario, Seed: 7}, func(c *core.Config) {
		c.StandUp = rig.DefaultStandUp
		c.Goal = p.Task.Goal(scenario.Layout(7))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var obs []float32
	err = r.RunSkill(context.Background(), rig.DefaultSettle, 1, func(tk *rig.Tick) (bool, error) {
		if tk.Fault != "" {
			return true, fmt.Errorf("fault %s", tk.Fault)
		}
		obs = append([]float32(nil), tk.Out.Obs...)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := &bank.Contract.Normaliser
	for i, v := range obs {
		obs[i] = v*max(st.Std[i], st.Epsilon) + st.Mean[i]
	}
	return obs
}
