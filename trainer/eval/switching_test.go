package eval

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/rig"
)

// switchPostures are four standing postures as constant skills: tall, crouched, wide and
// narrow. Each is a stable stance; switching between them at a standstill exercises the
// transitions alone, with no gait to confound them.
var switchPostures = [][skills.NumJoints]float32{
	{0, -0.6, 0.9, 0, -0.6, 0.9, 0, 0.6, -0.9, 0, 0.6, -0.9},           // tall: legs straighter
	{0, 0.6, -0.9, 0, 0.6, -0.9, 0, -0.6, 0.9, 0, -0.6, 0.9},           // crouched: legs bent
	{0.5, 0, 0, -0.5, 0, 0, 0.5, 0, 0, -0.5, 0, 0},                     // wide: hips out
	{-0.4, 0.3, -0.5, 0.4, 0.3, -0.5, -0.4, -0.3, 0.5, 0.4, -0.3, 0.5}, // narrow and low
}

// forcedSwitches runs the posture bank in MuJoCo through the real core in lockstep, forces n
// operator switches (cyclic, one every interval) and returns the largest one-tick move of a
// commanded joint target, and whether the robot fell or the supervisor tripped.
func forcedSwitches(t *testing.T, n int, interval, blend time.Duration) (maxStep float64, fell bool, fault string) {
	t.Helper()
	bank := skillstest.ConstantSlots(t, skillstest.Locomotion(t), switchPostures...)
	rg, err := rig.New(bank, robotboard.Config{}, func(c *core.Config) {
		c.StandUp = time.Second
		c.AutoRun = true
		c.Blend = blend
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	var jmap solo12.Map
	var cmd, prev solo12.JointCommand
	running := false
	rg.Driver.Observe = func(_ *core.Input, out *core.Output) {
		jmap.ReadCommand(&out.Command, &cmd)
		if running && rg.Core.Phase() == core.PhaseRun {
			for j := range cmd.Q {
				maxStep = max(maxStep, math.Abs(cmd.Q[j]-prev.Q[j]))
			}
		}
		prev = cmd
	}
	ctx := context.Background()
	if err := rg.Until(ctx, 5000, func() bool { return rg.Core.Phase() == core.PhaseRun || rg.Core.Fault() != "" }); err != nil {
		t.Fatal(err)
	}
	// Settle into the first posture before counting.
	for range 1000 {
		if err := rg.Step(); err != nil {
			t.Fatal(err)
		}
	}
	running = true
	for k := range n {
		next := (k + 1) % len(switchPostures)
		if err := rg.Command(corebus.Command{Kind: corebus.KindSkill, Skill: corebus.SkillSelection{By: corebus.SelectByIndex, Index: next, Generation: 1}}); err != nil {
			t.Fatal(err)
		}
		for range interval / time.Millisecond {
			if err := rg.Step(); err != nil {
				t.Fatal(err)
			}
			fell = fell || rg.Robot.Truth().Fell
		}
		if f := rg.Core.Fault(); f != "" {
			return maxStep, fell, f
		}
	}
	return maxStep, fell, ""
}

// TestHundredForcedSwitchesDoNotFell: 100 forced switches between standing postures, every
// 400 ms, blended over the default 300 ms: the robot never falls and the supervisor never
// trips, and no commanded target moves more in one tick than the blend's steepest slope
// allows. Blending off, the same switches move targets at the slew limit: the test reports
// both largest steps.
func TestHundredForcedSwitchesDoNotFell(t *testing.T) {
	const switches, interval = 100, 400 * time.Millisecond
	blended, fell, fault := forcedSwitches(t, switches, interval, core.DefaultBlend)
	if fell || fault != "" {
		t.Fatalf("blended switches: fell %v, fault %q", fell, fault)
	}
	// The largest posture change is 0.3 * 1.8 = 0.54 rad (KFE, tall to crouched); a raised
	// cosine over 300 ms moves at most pi/2 * 0.54 / 300 per ms.
	bound := math.Pi / 2 * 0.54 / float64(core.DefaultBlend/time.Millisecond)
	if blended > bound*1.01 {
		t.Errorf("largest target step %.5f rad per tick with blending, above the blend's %.5f", blended, bound)
	}
	unblended, fellRaw, faultRaw := forcedSwitches(t, switches, interval, 0)
	t.Logf("%d forced switches every %v: largest target step per 1 ms tick %.5f rad blended over %v, %.5f rad unblended (slew limit %v rad/s; unblended fell %v, fault %q)",
		switches, interval, blended, core.DefaultBlend, unblended, core.DefaultMaxTargetRate, fellRaw, faultRaw)
	if unblended <= blended {
		t.Errorf("blending did not lower the largest target step: %.5f blended, %.5f unblended", blended, unblended)
	}
}

// With switching on, a rollout records each switch the core made by itself: a standing skill
// tagged "right" makes no progress in the world fenced on the right, the core gives up on it
// after the stall time and runs the skill tagged "left", and the rollout says when, from which
// latent to which, and why. The "left" skill stands too: after another stall no route is clear,
// and as only stalls ruled them out (the fence is out of sight of the standing robot) the core
// tries the "right" one again. A bank whose one latent stalls has nowhere to go, and the
// rollout records that once.
func TestSwitchingRolloutRecordsTheSwitch(t *testing.T) {
	bank, cfg := stillNavigation(t, 1, 7.5)
	var still [skills.NumJoints]float32
	two := skillstest.ConstantSlots(t, bank.Contract, still, still)
	two.Latents[0].Info.Tags, two.Latents[1].Info.Tags = []string{"right"}, []string{"left"}
	one := skillstest.ConstantSlots(t, bank.Contract, still)
	one.Latents[0].Info.Tags = []string{"right"}
	cfg.Switching, cfg.StartYaw = true, 0
	cfg.Task.World = core.WorldFenceRight
	subjects := []Subject{{Label: "right", Bank: two, Latent: 0}, {Label: "alone", Bank: one, Latent: 0}}
	stall := core.DefaultSwitchConfig().StallAfter.Seconds()
	for _, on := range []bool{false, true} {
		c := cfg
		c.Switching = on
		res, err := Evaluate(t.Context(), c, subjects)
		if err != nil {
			t.Fatal(err)
		}
		// The fence experiment sums up the switches of each world it ran.
		runs, err := Robustness(t.Context(), c, subjects, res, []string{core.WorldFenceRight})
		if err != nil {
			t.Fatal(err)
		}
		if n := runs[0].Switches[0].Switches; (n > 0) != on {
			t.Fatalf("switching %v: the fence experiment counted %d switches", on, n)
		}
		if rec, def := res.Switching, core.DefaultSwitchConfig(); (rec != nil) != on || on && *rec != def {
			t.Fatalf("switching %v: switching settings recorded %+v, want them with switching only, the defaults %+v", on, rec, def)
		}
		got, stuck := res.Subjects[0].Rollouts[0].Switches, res.Subjects[0].Rollouts[0].NowhereToGo
		alone, aloneStuck := res.Subjects[1].Rollouts[0].Switches, res.Subjects[1].Rollouts[0].NowhereToGo
		if !on {
			if len(got)+len(stuck)+len(alone)+len(aloneStuck) != 0 {
				t.Fatalf("switching off: switches and blocked routes recorded: %+v %+v %+v %+v", got, stuck, alone, aloneStuck)
			}
			continue
		}
		if sum := SummariseSwitches(res.Subjects[0].Rollouts); sum.Rollouts != 1 || sum.Switches != 2 || sum.NoProgress != 2 || sum.Goal != 0 || sum.NowhereToGo != 0 {
			t.Fatalf("summary %+v of the switches by the standing robot %+v", sum, got)
		}
		sw, back := got[0], got[1]
		t.Logf("switches: %+v then %+v", sw, back)
		if sw.From != 0 || sw.To != 1 || sw.Trigger != corebus.TriggerNoProgress.String() || !slices.Contains(sw.Blocked, "right") ||
			sw.World != core.WorldFenceRight || sw.Considered != 1 || sw.Chosen == "" || sw.Time < stall || sw.Time > stall+0.5 {
			t.Fatalf("first switch %+v: want latent 0 -> 1 on no_progress after about %v s, right blocked, ranked in %s, 1 candidate, a reason", sw, stall, core.WorldFenceRight)
		}
		if back.From != 1 || back.To != 0 || !slices.Contains(back.Blocked, "left") || !slices.Contains(back.Blocked, "right") ||
			back.Considered != 1 || !strings.HasPrefix(back.Chosen, "no clear route") || back.Time < 2*stall {
			t.Fatalf("second switch %+v: want latent 1 -> 0 after two stalls, left and right blocked, as a retry on a stalled route", back)
		}
		if sum := SummariseSwitches(res.Subjects[1].Rollouts); len(alone) != 0 || sum.NowhereToGo != 1 || len(aloneStuck) != 1 ||
			aloneStuck[0].From != 0 || aloneStuck[0].To != 0 || aloneStuck[0].Considered != 0 || !slices.Contains(aloneStuck[0].Blocked, "right") ||
			aloneStuck[0].Time < stall {
			t.Fatalf("one latent: switches %+v, blocked with nowhere to go %+v (%+v); want none, and once, after a stall, the right blocked", alone, aloneStuck, sum)
		}
	}
}
