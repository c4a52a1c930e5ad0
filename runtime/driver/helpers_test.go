package driver

import (
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// constantBank is a locomotion bank whose single policy outputs action a whatever it sees.
func constantBank(t testing.TB, a [skills.NumJoints]float32) *skills.Bank {
	t.Helper()
	return skillstest.Constant(t, skillstest.Locomotion(t), a)
}

// rig is a core driven in lockstep against the emulated board with a first-order plant.
type rig struct {
	t     testing.TB
	board *board.Board
	core  *core.Core
	ls    *Lockstep
	// events collects every event, in order.
	events []corebus.Event
	// firstDamp is the tick at which the first damping command went out (0: none yet).
	firstDamp uint64
}

func newRig(t testing.TB, bank *skills.Bank, tweak func(*core.Config)) *rig {
	t.Helper()
	b := boardtest.FirstOrder(t, board.Config{})
	loaded, err := core.Load(bank, "test.npz", 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.DefaultConfig(bank)
	cfg.Calibration = core.CalibrateOffsets
	cfg.StandUp = 500 * time.Millisecond
	cfg.StopDamping = 100 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := core.New(cfg, loaded)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, board: b, core: c}
	r.ls = &Lockstep{Core: c, Board: b, SessionID: 0x5a5a}
	r.ls.Observe = func(in *core.Input, out *core.Output) {
		r.events = append(r.events, out.Events...)
		if r.firstDamp == 0 && isDamping(out) {
			r.firstDamp = uint64(in.Now / time.Millisecond)
		}
	}
	if err := r.ls.Connect(); err != nil {
		t.Fatal(err)
	}
	return r
}

// isDamping recognises the safety controller on the wire: every motor enabled with Kp = 0 and a
// positive Kd.
func isDamping(out *core.Output) bool {
	for m := range 12 {
		mc := out.Command.Motor(m)
		if mc.Kp != 0 || mc.Kd <= 0 {
			return false
		}
	}
	return true
}

// until steps until cond holds, failing after limit ticks.
func (r *rig) until(limit int, what string, cond func() bool) {
	r.t.Helper()
	for range limit {
		if cond() {
			return
		}
		if err := r.ls.Step(); err != nil {
			r.t.Fatal(err)
		}
	}
	r.t.Fatalf("%s: not reached in %d ticks (phase %v, fault %q)", what, limit, r.core.Phase(), r.core.Fault())
}

func (r *rig) standing() {
	r.t.Helper()
	r.until(3000, "stand", func() bool { return r.core.Phase() == core.PhaseHold })
}

func (r *rig) submit(cmd corebus.Command) {
	r.t.Helper()
	if !r.core.OfferCommand(cmd) {
		r.t.Fatal("command queue full")
	}
}

func (r *rig) event(kind corebus.EventKind) *corebus.Event {
	for i := range r.events {
		if r.events[i].Kind == kind {
			return &r.events[i]
		}
	}
	return nil
}
