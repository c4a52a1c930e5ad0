package mqtt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// fakeCore is a small honest stand-in for the runtime core: it drains its
// command queue at a 50 Hz policy tick, applies what it can, reports every
// outcome and change as events and stores a snapshot each tick.
type fakeCore struct {
	commands  *corebus.Ring[corebus.Command]
	events    *corebus.Ring[corebus.Event]
	state     *corebus.Latest[corebus.Snapshot]
	catalogue atomic.Pointer[corebus.Catalogue]
	// offered, when set before start, sees every command as it is queued.
	offered func(corebus.Command)
	// measure, when set before start, gets the time each policy tick spent
	// handing its events and state to the adapter.
	measure func(time.Duration)

	mu      sync.Mutex
	applied []corebus.Command

	snap corebus.Snapshot // owned by the policy goroutine
}

func newFakeCore() *fakeCore {
	c := &fakeCore{
		commands: corebus.NewRing[corebus.Command](64),
		events:   corebus.NewRing[corebus.Event](256),
		state:    corebus.NewLatest[corebus.Snapshot](),
	}
	c.catalogue.Store(&corebus.Catalogue{
		Generation: 1, Path: "/banks/solo.npz", LatentDim: 4,
		Skills: []corebus.Skill{
			{Index: 0, Name: "trot", Tags: []string{"walk"}},
			{Index: 1, Name: "bound", Tags: []string{"fast", "high"}},
			{Index: 2, Name: "pace", Tags: []string{"walk", "left"}},
		},
	})
	c.snap.Mode = corebus.ModeStand
	return c
}

func (c *fakeCore) OfferCommand(cmd corebus.Command) bool {
	if c.offered != nil {
		c.offered(cmd)
	}
	return c.commands.Offer(cmd)
}
func (c *fakeCore) Catalogue() *corebus.Catalogue        { return c.catalogue.Load() }
func (c *fakeCore) LoadState(dst *corebus.Snapshot) bool { return c.state.Load(dst) }
func (c *fakeCore) PollEvent(dst *corebus.Event) bool    { return c.events.Poll(dst) }
func (c *fakeCore) EventsDropped() uint64                { return c.events.Dropped() }

// start runs the policy tick until ctx is done.
func (c *fakeCore) start(ctx context.Context) {
	c.state.Store(&c.snap)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				c.policyTick()
			}
		}
	}()
}

func (c *fakeCore) policyTick() {
	start := time.Now()
	defer func() {
		if c.measure != nil {
			c.measure(time.Since(start))
		}
	}()
	var cmd corebus.Command
	for c.commands.Poll(&cmd) {
		ok, reason := c.apply(&cmd)
		c.mu.Lock()
		c.applied = append(c.applied, cmd)
		c.mu.Unlock()
		if cmd.ID != "" {
			c.events.Offer(corebus.Event{Kind: corebus.EventCommandDone, OK: ok, Reason: reason,
				Command: corebus.CommandRef{Kind: cmd.Kind, ID: cmd.ID, ReplyTo: cmd.ReplyTo}})
		}
	}
	c.snap.Loop.Ticks += 20
	c.snap.Loop.PolicyTicks++
	c.snap.Robot.JointPos[0] = float64(c.snap.Loop.PolicyTicks)
	c.state.Store(&c.snap)
}

func (c *fakeCore) setMode(m corebus.Mode, reason string) {
	if c.snap.Mode != m {
		c.snap.Mode = m
		c.events.Offer(corebus.Event{Kind: corebus.EventModeChange, Mode: m, Reason: reason})
	}
}

func (c *fakeCore) apply(cmd *corebus.Command) (bool, string) {
	switch cmd.Kind {
	case corebus.KindSkill:
		cat := c.catalogue.Load()
		if cmd.Skill.By != corebus.SelectByLatent && cmd.Skill.Generation != cat.Generation {
			return false, "the bank changed since the command was checked"
		}
		to := corebus.ActiveSkill{Source: corebus.SkillBank, Index: cmd.Skill.Index}
		if cmd.Skill.By == corebus.SelectByLatent {
			to = corebus.ActiveSkill{Source: corebus.SkillLatent}
		}
		c.events.Offer(corebus.Event{Kind: corebus.EventSkillSwitch, From: c.snap.Skill, To: to, Reason: "operator"})
		c.snap.Skill = to
	case corebus.KindMode:
		if c.snap.EStop && cmd.Mode != corebus.ModeStop && cmd.Mode != corebus.ModeDamp {
			return false, "emergency stop latched"
		}
		c.setMode(cmd.Mode, "operator")
	case corebus.KindEStop:
		c.snap.EStop = true
		c.setMode(corebus.ModeDamp, "estop")
	case corebus.KindEStopClear:
		c.snap.EStop = false
	case corebus.KindVelocity, corebus.KindGoal:
		if c.snap.Mode != corebus.ModeRun {
			return false, "not running"
		}
	case corebus.KindBank:
		old := c.catalogue.Load()
		next := *old
		next.Generation, next.Path = old.Generation+1, cmd.BankPath
		c.catalogue.Store(&next)
		c.events.Offer(corebus.Event{Kind: corebus.EventBankLoad, OK: true, BankPath: cmd.BankPath})
	case corebus.KindStandStill:
		if c.snap.Mode == corebus.ModeRun {
			c.setMode(corebus.ModeStand, "deadman")
		}
	}
	return true, ""
}

// appliedCommands returns a copy of every command the core has drained.
func (c *fakeCore) appliedCommands() []corebus.Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]corebus.Command(nil), c.applied...)
}
