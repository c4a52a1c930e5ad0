package app_test

import (
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/recorder"
	"github.com/dualforce/dualforce/runtime/replay"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// A recall is part of the flight recording: replaying a run in which an operator recalled a
// skill by reward, mid-run and blended, reproduces every command byte for byte.
func TestReplayReproducesARecall(t *testing.T) {
	cfg := app.TestConfig(t)
	cfg.Limits.LoopOverrunBudget = 19 // a shared machine; timing is not what this test is about
	bank := skillstest.ConstantSlots(t, skillstest.Locomotion(t),
		[skills.NumJoints]float32{}, [skills.NumJoints]float32{0, 0.5, -0.5, 0, 0.5, -0.5, 0, -0.5, 0.5, 0, -0.5, 0.5})
	for i := range bank.Latents {
		psi := make([]float32, bank.Contract.Features.Dim(bank.Contract.Layout))
		psi[2] = -float32(i) // latent 1 bends FL_KFE
		bank.Latents[i].Info.OnlinePsi = psi
	}
	if err := skills.WriteBank(cfg.Bank, bank); err != nil {
		t.Fatal(err)
	}
	h := app.StartHarness(t, cfg, app.Options{AutoRun: true})
	c := h.Runtime().Core()
	var snap corebus.Snapshot
	await := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !(c.LoadMonitor(&snap) && cond()) {
			if time.Now().After(deadline) || c.Fault() != "" {
				t.Fatalf("%s: not within 10 s (phase %v, fault %q)", what, c.Phase(), c.Fault())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	await("running", func() bool { return c.Phase() == core.PhaseRun })
	ran := snap.Loop.PolicyTicks
	await("200 ms of running", func() bool { return snap.Loop.PolicyTicks >= ran+10 })
	c.OfferCommand(corebus.Command{Kind: corebus.KindRecall, ID: "bend", Recall: corebus.Recall{
		Reward: []corebus.RewardTerm{{Element: "joint_pos.FL_KFE", Weight: -1}}}})
	await("the recalled skill running", func() bool { return snap.Skill.Index == 1 })
	ran = snap.Loop.PolicyTicks
	await("the blend done", func() bool { return snap.Loop.PolicyTicks >= ran+20 })
	h.Stop(t)

	files, err := recorder.Recordings(cfg.Recorder.Dir, "")
	if err != nil || len(files) == 0 {
		t.Fatalf("recordings %v %v", files, err)
	}
	res, err := replay.Run(files, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence != nil {
		t.Fatalf("replay of a recall diverged: %v", res.Divergence)
	}
	t.Logf("replayed %d ticks with a recall, %d commands identical byte for byte", res.Ticks, res.Compared)
}
