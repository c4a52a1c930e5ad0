package rig

import (
	"context"
	"fmt"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
)

// Tick is what a skill's visitor sees: one of its policy ticks, or the tick a fault latched.
type Tick struct {
	// Time is the simulated time since the skill's first policy tick (0 there, and at a fault
	// before the skill started).
	Time time.Duration
	// Out is the core's output of the tick: on a policy tick, the observation the skill saw and
	// the action it chose.
	Out *core.Output
	// Fault is the fault the core latched, "" when none. A fault ends the skill.
	Fault string
}

// RunSkill does what an operator does on the robot: it waits for the core to stand the robot
// up, lets it hold the default pose for settle, sends "run", and then calls visit at every
// policy tick of the skill, until visit reports done or a fault latches (visit sees that tick
// too, also when the fault latched before the skill started). A skill that does not reach
// maxSteps+1 policy ticks in time is an error wrapping ErrNotReached.
func (r *Rig) RunSkill(ctx context.Context, settle time.Duration, maxSteps int, visit func(t *Tick) (done bool, err error)) error {
	standBudget := int((r.standUp + 5*time.Second) / time.Millisecond)
	if err := r.Until(ctx, standBudget, func() bool { return r.Core.Phase() == core.PhaseHold || r.Core.Fault() != "" }); err != nil {
		return fmt.Errorf("rig: standing up: %w", err)
	}
	for range int(settle / time.Millisecond) {
		if r.Core.Fault() != "" {
			break
		}
		if err := r.Step(); err != nil {
			return err
		}
	}
	if f := r.Core.Fault(); f != "" {
		_, err := visit(&Tick{Out: r.Driver.Output(), Fault: f})
		return err
	}
	if err := r.Command(corebus.Command{Kind: corebus.KindMode, Mode: corebus.ModeRun}); err != nil {
		return err
	}
	limit := (maxSteps+2)*r.perStep + standBudget
	var start time.Duration
	started := false
	for tick := 0; ; tick++ {
		if tick == limit {
			return fmt.Errorf("rig: %w: the skill did not run %d policy steps in %d ticks (phase %v)", ErrNotReached, maxSteps, limit, r.Core.Phase())
		}
		if tick%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := r.Step(); err != nil {
			return err
		}
		out, fault := r.Driver.Output(), r.Core.Fault()
		if !out.PolicyTick && fault == "" {
			continue
		}
		if !started {
			start, started = r.Driver.Now(), true
		}
		done, err := visit(&Tick{Time: r.Driver.Now() - start, Out: out, Fault: fault})
		if err != nil || done || fault != "" {
			return err
		}
	}
}
