package eval

import (
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// The runtime's scenarios against the simulated Solo12 instead of runtime/driver's first-order
// plant: the same core, the same lockstep driver, MuJoCo behind the board.

const (
	standingHeight = 0.235 // m, spec/solo12.md
	heightBand     = 0.03
)

func TestSimPowerOnStandRunStop(t *testing.T) {
	var a [skills.NumJoints]float32
	a[1], a[4] = 0.5, 0.5 // both front HFE forward by 0.15 rad
	r := newSimRig(t, constantBank(t, a), nil)
	r.until(1000, "drivers ready", func() bool { return r.Core.Phase() == core.PhaseStandUp })
	r.standing()
	lo, hi := math.Inf(1), math.Inf(-1)
	r.steps(500, func() {
		z := r.Robot.Truth().Pos[2]
		lo, hi = min(lo, z), max(hi, z)
	})
	t.Logf("base height while holding the default pose: %.4f..%.4f m", lo, hi)
	if lo < standingHeight-heightBand || hi > standingHeight+heightBand {
		t.Fatalf("base height %.4f..%.4f m while standing, want %.3f ± %.3f", lo, hi, standingHeight, heightBand)
	}
	before, _ := r.simJoints()

	r.command(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeRun, ID: "run"})
	r.until(40, "run", func() bool { return r.Core.Phase() == core.PhaseRun })
	r.steps(1000, nil)
	after, _ := r.simJoints()
	want := 0.3 * 0.5
	for _, j := range []int{1, 4} {
		if moved := after[j] - before[j]; moved < want/2 || moved > want*1.5 {
			t.Errorf("joint %d moved %.3f rad under the skill, want about %.3f", j, moved, want)
		}
	}
	r.intact()

	r.command(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeStop})
	r.until(400, "off", func() bool { return r.Core.Phase() == core.PhaseOff })
	r.steps(5, nil) // the board's drivers switch off the tick after the command says so
	for d, dc := range r.Driver.Output().Command.Drivers {
		if dc.Mode&(proto.ModeEnableMotor1|proto.ModeEnableMotor2) != 0 {
			t.Fatalf("driver %d still commanded on after stop: %#x", d, dc.Mode)
		}
	}
	for d, ds := range r.sensor.Drivers {
		if ds.Status&(proto.StatusMotor1Enabled|proto.StatusMotor2Enabled) != 0 {
			t.Fatalf("board reports driver %d's motors enabled after stop: status %#x", d, ds.Status)
		}
	}
	if f := r.Core.Fault(); f != "" {
		t.Fatalf("fault %q in a clean run", f)
	}
}

func TestSimLinkBlackoutDampsWithinOneTickOfBoardTimeout(t *testing.T) {
	r := newSimRig(t, constantBank(t, [skills.NumJoints]float32{}), func(c *core.Config) { c.AutoRun = true })
	r.until(4000, "run", func() bool { return r.Core.Phase() == core.PhaseRun })
	r.steps(200, nil)
	start := r.tick() + 1
	lost := func(tick uint64) bool { return tick >= start && tick < start+30 }
	r.Driver.DropSensor, r.Driver.DropCommand = lost, lost
	var boardError uint64
	r.until(60, "board error and core fault", func() bool {
		if boardError == 0 && r.Robot.Board().State() == board.StateError {
			boardError = r.tick()
		}
		return boardError != 0 && r.Core.Fault() != ""
	})
	if r.Core.Fault() != "link_timeout" || r.Core.Phase() != core.PhaseDamp {
		t.Fatalf("fault %q phase %v", r.Core.Fault(), r.Core.Phase())
	}
	if d := int64(r.firstDamp) - int64(boardError); d > 1 || d < -1 {
		t.Fatalf("damping from tick %d, board timed out at %d: more than one tick apart", r.firstDamp, boardError)
	}
	t.Logf("blackout from tick %d: board in ERROR at tick %d (%d ms), core damping from tick %d", start, boardError, boardError-start, r.firstDamp)
	// The link comes back; the robot, its motors off by the board, settles without blowing up.
	r.steps(1000, r.intact)
	r.atRest()
	if r.Core.Phase() != core.PhaseDamp {
		t.Fatalf("phase %v after the blackout", r.Core.Phase())
	}
	t.Logf("after 1 s: %+v", r.Robot.Truth())
}

func TestSimNaNActionDamps(t *testing.T) {
	r := newSimRig(t, skillstest.NaNAction(t, simContract(t)), func(c *core.Config) { c.AutoRun = true })
	r.until(4000, "fault", func() bool { return r.Core.Fault() != "" })
	faultTick := r.tick()
	if r.Core.Fault() != "non_finite" || r.Core.Phase() != core.PhaseDamp {
		t.Fatalf("fault %q phase %v", r.Core.Fault(), r.Core.Phase())
	}
	if e := r.event(corebus.EventFault); e == nil || e.Reason != "NaN or Inf in the policy action" {
		t.Fatalf("fault event %+v", e)
	}
	if r.firstDamp != faultTick {
		t.Fatalf("damping from tick %d, fault at tick %d", r.firstDamp, faultTick)
	}
	r.steps(300, r.intact)
}

func TestSimJointLimitDamps(t *testing.T) {
	// The limit is tightened on a side the robot does not reach while it sinks at power-on and
	// stands up (FL_HAA stays within 0..0.11 rad then; the hips and knees swing wide): the skill
	// turns FL_HAA to 0 - 0.3 = -0.3 rad, past a lower limit of -0.15.
	const joint, limit = 0, -0.15
	var a [skills.NumJoints]float32
	a[joint] = -0.999
	r := newSimRig(t, constantBank(t, a), func(c *core.Config) {
		c.AutoRun = true
		c.Limits.JointLower[joint] = limit
	})
	r.until(4000, "run", func() bool { return r.Core.Phase() == core.PhaseRun || r.Core.Fault() != "" })
	if f := r.Core.Fault(); f != "" {
		t.Fatalf("fault %q before the skill ran", f)
	}
	r.until(1000, "fault", func() bool { return r.Core.Fault() != "" })
	faultTick := r.tick()
	if r.Core.Fault() != "joint_limit" {
		t.Fatalf("fault %q", r.Core.Fault())
	}
	if e := r.event(corebus.EventFault); e == nil || e.Reason != "joint FL_HAA outside its position limits" {
		t.Fatalf("fault event %+v", e)
	}
	q, _ := r.simJoints()
	if q[joint] > limit+0.01 {
		t.Fatalf("true FL_HAA at %.3f rad when the limit tripped, want below %.2f", q[joint], limit)
	}
	if r.firstDamp != faultTick {
		t.Fatalf("damping from tick %d, fault at tick %d", r.firstDamp, faultTick)
	}
	t.Logf("FL_HAA crossed %.2f rad at tick %d (true angle %.3f); damping from tick %d", limit, faultTick, q[joint], r.firstDamp)
	r.steps(300, r.intact)
}
