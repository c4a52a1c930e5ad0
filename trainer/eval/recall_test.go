package eval

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/rig"
)

// Recall by reward, measured: the posture bank is evaluated in MuJoCo (online successor
// features of locomotion's phi, the joint positions), then a core running the evaluated bank
// recalls a skill for "straighter legs" and for "bent legs" (weights on the knee angles). The
// recalled skill's measured base height must move the way the reward asks: the highest of the
// bank for straight legs, the lowest for bent legs. A reward on an element outside phi is
// refused: the bank carries no FRE encoder.
func TestRecallByRewardMovesMeasuredBehaviour(t *testing.T) {
	bank := skillstest.ConstantSlots(t, skillstest.Locomotion(t), switchPostures...)
	subjects := Latents(bank)
	res, err := Evaluate(context.Background(), shortConfig(t, 2, 2), subjects)
	if err != nil {
		t.Fatal(err)
	}
	evaluated, err := WithOnlineResults(bank, subjects, res)
	if err != nil {
		t.Fatal(err)
	}
	height := make([]float64, len(res.Subjects))
	for i, s := range res.Subjects {
		for _, r := range s.Rollouts {
			height[i] += r.FinalPos[2] / float64(len(s.Rollouts))
		}
	}
	t.Logf("measured base height per posture: %.3f", height)

	rg, err := rig.New(evaluated, robotboard.Config{}, func(c *core.Config) { c.StandUp = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	var done *corebus.Event
	rg.Driver.Observe = func(_ *core.Input, out *core.Output) {
		for _, ev := range out.Events {
			if ev.Kind == corebus.EventCommandDone && ev.Command.Kind == corebus.KindRecall {
				done = &ev
			}
		}
	}
	recall := func(reward map[string]float64) *corebus.Event {
		t.Helper()
		cmd := corebus.Command{Kind: corebus.KindRecall, ID: "r"}
		for k, w := range reward {
			cmd.Recall.Reward = append(cmd.Recall.Reward, corebus.RewardTerm{Element: k, Weight: w})
		}
		done = nil
		if err := rg.Command(cmd); err != nil {
			t.Fatal(err)
		}
		if err := rg.Until(context.Background(), 100, func() bool { return done != nil }); err != nil {
			t.Fatal(err)
		}
		return done
	}
	// Front knees bend negative, hind knees positive (skills.StandingPose): straightening moves
	// the front knees up and the hind knees down.
	straighter := map[string]float64{"joint_pos.FL_KFE": 1, "joint_pos.FR_KFE": 1, "joint_pos.HL_KFE": -1, "joint_pos.HR_KFE": -1}
	bent := map[string]float64{}
	for k, w := range straighter {
		bent[k] = -w
	}
	highest, lowest := 0, 0
	for i, h := range height {
		if h > height[highest] {
			highest = i
		}
		if h < height[lowest] {
			lowest = i
		}
	}
	for _, tc := range []struct {
		name   string
		reward map[string]float64
		want   int
	}{
		{"straighter legs", straighter, highest},
		{"bent legs", bent, lowest},
	} {
		ev := recall(tc.reward)
		if !ev.OK || ev.Recalled.Index != tc.want {
			t.Fatalf("%s: recalled %d (ok %v, %s), want %d: measured heights %.3f", tc.name, ev.Recalled.Index, ev.OK, ev.Reason, tc.want, height)
		}
		t.Logf("%s: recalled posture %d, score %.3f, measured base height %.3f m", tc.name, ev.Recalled.Index, ev.Recalled.Score, height[ev.Recalled.Index])
	}
	ev := recall(map[string]float64{"base_ang_vel.z": 1}) // turning left: outside locomotion's phi
	if ev.OK || !strings.Contains(ev.Reason, "no FRE encoder") {
		t.Fatalf("turning left: ok %v, %s", ev.OK, ev.Reason)
	}
	t.Logf("turning left refused: %s", ev.Reason)
}
