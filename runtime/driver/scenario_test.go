package driver

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/mqtt"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

func TestPowerOnStandRunStop(t *testing.T) {
	var a [skills.NumJoints]float32
	a[1] = 0.5 // FL_HFE
	r := newRig(t, constantBank(t, a), nil)
	r.until(500, "drivers ready", func() bool { return r.core.Phase() == core.PhaseStandUp })
	r.standing()
	r.ls.Run(t.Context(), 300) // the plant settles onto the final target
	pose := skills.StandingPose
	for j, q := range r.core.Joints().Q {
		if math.Abs(q-float64(pose[j])) > 0.05 {
			t.Fatalf("joint %d at %.3f after standing up, want %.3f", j, q, pose[j])
		}
	}
	r.submit(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeRun, ID: "run-1"})
	r.until(40, "run", func() bool { return r.core.Phase() == core.PhaseRun })
	if e := r.event(corebus.EventCommandDone); e == nil || !e.OK || e.Command.ID != "run-1" {
		t.Fatalf("run command reply %+v", e)
	}
	r.until(1000, "policy target", func() bool {
		return math.Abs(r.core.Joints().Q[1]-float64(pose[1]+0.3*0.5)) < 0.02
	})
	r.submit(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeStop})
	r.until(400, "off", func() bool { return r.core.Phase() == core.PhaseOff })
	r.ls.Step()
	for d, dc := range r.ls.Output().Command.Drivers {
		if dc.Mode&(proto.ModeEnableMotor1|proto.ModeEnableMotor2) != 0 {
			t.Fatalf("driver %d still enabled after stop: %#x", d, dc.Mode)
		}
	}
	if r.core.Fault() != "" {
		t.Fatalf("fault %q in a clean run", r.core.Fault())
	}
}

func TestLinkBlackoutDampsWithinOneTickOfBoardTimeout(t *testing.T) {
	r := newRig(t, constantBank(t, [12]float32{}), nil)
	r.standing()
	start := r.ls.tick + 1
	lost := func(tick uint64) bool { return tick >= start && tick < start+30 }
	r.ls.DropSensor, r.ls.DropCommand = lost, lost
	var boardError uint64
	r.until(40, "board error", func() bool {
		if boardError == 0 && r.board.State() == board.StateError {
			boardError = r.ls.tick
		}
		return r.core.Fault() != "" && boardError != 0
	})
	if r.core.Fault() != "link_timeout" || r.core.Phase() != core.PhaseDamp {
		t.Fatalf("fault %q phase %v", r.core.Fault(), r.core.Phase())
	}
	if d := int64(r.firstDamp) - int64(boardError); d > 1 || d < -1 {
		t.Fatalf("damping at tick %d, board timed out at %d: more than one tick apart", r.firstDamp, boardError)
	}
	t.Logf("board in ERROR at tick %d (blackout from %d), core damping from tick %d", boardError, start, r.firstDamp)
}

func TestNaNActionDamps(t *testing.T) {
	r := newRig(t, skillstest.NaNAction(t, skillstest.Locomotion(t)), func(cfg *core.Config) { cfg.AutoRun = true })
	r.until(3000, "fault", func() bool { return r.core.Fault() != "" })
	if r.core.Fault() != "non_finite" || r.core.Phase() != core.PhaseDamp {
		t.Fatalf("fault %q phase %v", r.core.Fault(), r.core.Phase())
	}
	r.ls.Step()
	if !isDamping(r.ls.Output()) {
		t.Fatal("no damping command after a NaN action")
	}
	if e := r.event(corebus.EventFault); e == nil || e.Reason == "" {
		t.Fatalf("fault event %+v", e)
	}
}

func TestJointLimitDamps(t *testing.T) {
	var a [skills.NumJoints]float32
	a[1] = 0.999 // FL_HFE target 0.8 + 0.3 = 1.1 rad
	r := newRig(t, constantBank(t, a), func(cfg *core.Config) {
		cfg.AutoRun = true
		cfg.Limits.JointUpper[1] = 0.95
	})
	r.until(4000, "fault", func() bool { return r.core.Fault() != "" })
	if r.core.Fault() != "joint_limit" {
		t.Fatalf("fault %q", r.core.Fault())
	}
	if e := r.event(corebus.EventFault); e == nil || e.Reason != "joint FL_HFE outside its position limits" {
		t.Fatalf("fault event %+v", e)
	}
	r.ls.Step()
	if !isDamping(r.ls.Output()) {
		t.Fatal("no damping command after the joint limit")
	}
}

func TestDriverErrorAndOperatorResetCycle(t *testing.T) {
	r := newRig(t, constantBank(t, [12]float32{}), nil)
	r.standing()
	if err := r.board.SetDriverError(2, proto.ErrEncoder1); err != nil {
		t.Fatal(err)
	}
	r.until(5, "driver fault", func() bool { return r.core.Fault() == "driver_error" })
	// Reset is refused while the driver still reports the error? The fault is latched, and a
	// reset clears the latch; the next tick's check trips it again while the cause persists.
	_ = r.board.SetDriverError(2, proto.ErrNone)
	r.submit(corebus.Command{Kind: corebus.KindEStopClear, ID: "clear"})
	r.until(40, "fault cleared", func() bool { return r.core.Fault() == "" })
	r.submit(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeStand, ID: "stand"})
	r.standing()

	r.submit(corebus.Command{Kind: corebus.KindEStop, ID: "estop"})
	r.until(40, "operator estop", func() bool { return r.core.Fault() == "operator_estop" })
	r.submit(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeRun, ID: "run-refused"})
	r.until(40, "reply", func() bool {
		for _, e := range r.events {
			if e.Kind == corebus.EventCommandDone && e.Command.ID == "run-refused" {
				return !e.OK && e.Reason != ""
			}
		}
		return false
	})
	if r.core.Phase() != core.PhaseDamp {
		t.Fatalf("phase %v after a refused run", r.core.Phase())
	}
}

func TestCorruptBankRefusedOldBankKept(t *testing.T) {
	r := newRig(t, constantBank(t, [12]float32{}), nil)
	loader := NewBankLoader()
	ctx := t.Context()
	go loader.Run(ctx, r.core, 2)
	r.standing()

	dir := t.TempDir()
	good := filepath.Join(dir, "good.npz")
	if err := skills.WriteBank(good, constantBank(t, [12]float32{0.1})); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	corrupt := filepath.Join(dir, "corrupt.npz")
	if err := os.WriteFile(corrupt, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	before := r.core.Catalogue()
	for _, path := range []string{corrupt, filepath.Join(dir, "missing.npz")} {
		r.events = nil
		if !loader.Request(corebus.Command{Kind: corebus.KindBank, ID: "load", BankPath: path}) {
			t.Fatal("loader busy")
		}
		r.awaitBankLoad(t)
		e := r.event(corebus.EventBankLoad)
		if e.OK || e.Reason == "" || e.BankPath != path {
			t.Fatalf("bank %s: event %+v", path, e)
		}
		t.Logf("refused %s: %s", filepath.Base(path), e.Reason)
		if r.core.Catalogue() != before {
			t.Fatal("the running bank changed after a refused load")
		}
	}
	r.events = nil
	loader.Request(corebus.Command{Kind: corebus.KindBank, ID: "load", BankPath: good})
	r.awaitBankLoad(t)
	if e := r.event(corebus.EventBankLoad); !e.OK || r.core.Catalogue().Generation != 2 {
		t.Fatalf("good bank: %+v generation %d", e, r.core.Catalogue().Generation)
	}
}

func TestCoreStepDoesNotAllocate(t *testing.T) {
	r := newRig(t, constantBank(t, [12]float32{0.2}), func(cfg *core.Config) { cfg.AutoRun = true })
	r.until(3000, "run", func() bool { return r.core.Phase() == core.PhaseRun })
	r.ls.Observe = nil
	if n := testing.AllocsPerRun(500, func() {
		if err := r.ls.Step(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per lockstep tick (core + board + codec)", n)
	}
}

// The core is what the MQTT adapter talks to.
var _ mqtt.Core = (*core.Core)(nil)

// awaitBankLoad steps the core until the loader, which reads the file on its own goroutine,
// has answered: by wall time, since a loaded machine may take long to schedule it.
func (r *rig) awaitBankLoad(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.event(corebus.EventBankLoad) == nil {
		if time.Now().After(deadline) {
			t.Fatal("no bank load event within 10 s")
		}
		if err := r.ls.Step(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// A robot that collapsed with its motors off may lie with a joint beyond its software limit:
// standing up brings it back inside without a fault, and once standing the limit applies.
func TestStandUpFromBeyondTheLimits(t *testing.T) {
	// The encoders count from power-on, so the offsets say where the joints were: FL_HFE at
	// 1.6 rad, past its 1.45 rad limit.
	r := newRig(t, skillstest.Constant(t, skillstest.Locomotion(t), [12]float32{}), func(cfg *core.Config) {
		cfg.Offsets[1] = 1.6
	})
	r.until(500, "stand-up starts", func() bool { return r.core.Phase() == core.PhaseStandUp })
	if q := r.core.Joints().Q[1]; q < 1.5 {
		t.Fatalf("FL_HFE starts at %.3f rad, want beyond the 1.45 limit", q)
	}
	r.standing()
	if f := r.core.Fault(); f != "" {
		t.Fatalf("fault %q standing up from beyond a limit", f)
	}
}

// scriptedActor is a core.Actor that sees every observation and answers a fixed action, or an
// error once told to.
type scriptedActor struct {
	action [skills.NumJoints]float32
	calls  int
	obs    []float32
	fail   error
}

func (a *scriptedActor) Act(obs, action []float32) error {
	a.calls++
	a.obs = append(a.obs[:0], obs...)
	copy(action, a.action[:])
	return a.fail
}

// With Config.Actor the core asks the actor, not the bank's policy, at every policy tick, with
// the observation it built; the bank lends only its contract. An actor's error damps like a
// non-finite action.
func TestActorReplacesThePolicy(t *testing.T) {
	var a scriptedActor
	a.action[1] = 0.5 // FL_HFE; the bank's policy would hold the default pose
	r := newRig(t, constantBank(t, [skills.NumJoints]float32{}), func(c *core.Config) {
		c.AutoRun = true
		c.Actor = &a
	})
	r.until(3000, "run", func() bool { return r.core.Phase() == core.PhaseRun })
	r.until(1000, "the actor's target", func() bool {
		return math.Abs(r.core.Joints().Q[1]-float64(skills.StandingPose[1]+0.3*0.5)) < 0.02
	})
	if a.calls == 0 || len(a.obs) != 48 {
		t.Fatalf("the actor was called %d times with a %d-dim observation", a.calls, len(a.obs))
	}
	r.until(40, "policy tick", func() bool { return r.ls.Output().PolicyTick })
	if out := r.ls.Output(); [skills.NumJoints]float32(out.Action) != a.action || !slices.Equal(out.Obs, a.obs) {
		t.Fatalf("the core ran %v on %v; the actor answered %v", out.Action, out.Obs, a.action)
	}
	a.fail = errors.New("behaviour failed")
	r.until(40, "fault", func() bool { return r.core.Fault() != "" })
	if r.core.Fault() != "non_finite" {
		t.Fatalf("an actor's error latched %q", r.core.Fault())
	}
}
