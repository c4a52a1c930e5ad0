package app

import (
	"context"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/mqtt"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// Recall by reward end to end: the operator client skillrt op uses sends cmd/recall through the
// embedded broker; the runtime's core picks the latent whose measured successor features serve
// the reward best, runs it, and the reply names it with its score. A reward outside the bank's
// features goes through the bank's FRE encoder (one that encodes every reward to "lean"'s
// latent), and the reply names the skill and its distance.
func TestRecallByRewardOverMQTT(t *testing.T) {
	cfg := testConfig(t)
	bank := twoSkillBank(t)
	// Measured successor features of locomotion's phi (joint_pos, standardised): "lean" bends
	// FL_HFE, "still" does not.
	for i := range bank.Latents {
		psi := make([]float32, bank.Contract.Features.Dim(bank.Contract.Layout))
		psi[1] = float32(i)
		bank.Latents[i].Info.OnlinePsi = psi
	}
	bank.FRE = skillstest.ConstantFRE(t, bank.Contract, bank.Latents[1].Z)
	if err := skills.WriteBank(cfg.Bank, bank); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, cfg, Options{})
	c := h.rt.Core()
	waitFor(t, 10*time.Second, "standing", func() bool { return c.Phase() == core.PhaseHold || c.Fault() != "" })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op, err := mqtt.DialOperator(ctx, mqtt.OperatorConfig{RobotID: testRobot, Broker: "tcp://" + cfg.MQTT.Listen})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()

	for _, tc := range []struct {
		reward map[string]float64
		want   string
		score  float64
	}{
		{map[string]float64{"joint_pos.FL_HFE": 1}, "lean", 1},
		{map[string]float64{"joint_pos.FL_HFE": -2}, "still", 0},
	} {
		r, err := op.Recall(ctx, tc.reward, 0)
		if err != nil {
			t.Fatalf("recall %v: %v", tc.reward, err)
		}
		if r.Recall == nil || r.Recall.Skill == nil || r.Recall.Skill.Name != tc.want || r.Recall.By != "features" || r.Recall.Score == nil || float64(*r.Recall.Score) != tc.score {
			t.Fatalf("recall %v: reply %+v %+v, want %s by features with score %v", tc.reward, r, r.Recall, tc.want, tc.score)
		}
		var snap corebus.Snapshot
		waitFor(t, 5*time.Second, tc.want+" running", func() bool {
			return c.LoadMonitor(&snap) && snap.Skill.Index == r.Recall.Skill.Index
		})
	}
	if _, err := op.Recall(ctx, map[string]float64{"joint_pos.FL_HFE": -2}, 0); err != nil {
		t.Fatal(err) // back to "still"
	}
	r, err := op.Recall(ctx, map[string]float64{"base_lin_vel.x": 1}, 0)
	if err != nil || r.Recall == nil || r.Recall.By != "fre" || r.Recall.Skill == nil || r.Recall.Skill.Name != "lean" ||
		r.Recall.Distance == nil || *r.Recall.Distance != 0 {
		t.Fatalf("a reward outside the features: %v, reply %+v %+v", err, r, r.Recall)
	}
}

// The flight recorder's event line of an automatic switch says why; of a blocked route with
// nowhere to go, which skill and what blocked it; of a recall, which latent.
func TestAppendEventExplainsSwitchesAndRecalls(t *testing.T) {
	sw := corebus.Event{Kind: corebus.EventSkillSwitch, Reason: "obstacle blocks the current skill's route", To: corebus.ActiveSkill{Source: corebus.SkillBank, Index: 2},
		Switch: corebus.SwitchReport{Trigger: corebus.TriggerObstacle, World: "obstacle_fence_left", Considered: 2, Chosen: "highest measured success in the matching world"}}
	sw.Switch.Candidates[0].Index, sw.Switch.Candidates[1].Index = 2, 0
	stuck := corebus.Event{Kind: corebus.EventRouteBlocked, Reason: "nowhere to go", From: corebus.ActiveSkill{Source: corebus.SkillBank, Index: 3},
		Switch: corebus.SwitchReport{Trigger: corebus.TriggerNoProgress, World: "obstacle_fenced"}}
	done := corebus.Event{Kind: corebus.EventCommandDone, OK: true, Recalled: corebus.RecallResult{Valid: true, Index: 1}}
	for _, tc := range []struct {
		ev   corebus.Event
		want string
	}{
		{sw, `{"kind":"skill_switch","reason":"obstacle blocks the current skill's route","to":2,"trigger":"obstacle","world":"obstacle_fence_left","candidates":[2,0],"chosen":"highest measured success in the matching world"}` + "\n"},
		{stuck, `{"kind":"route_blocked","reason":"nowhere to go","from":3,"trigger":"no_progress","world":"obstacle_fenced","candidates":[],"chosen":""}` + "\n"},
		{done, `{"kind":"command_done","ok":true,"recalled":1}` + "\n"},
	} {
		if got := string(appendEvent(nil, &tc.ev)); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	buf := make([]byte, 0, 512)
	if allocs := testing.AllocsPerRun(100, func() { buf = appendEvent(buf[:0], &sw) }); allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
