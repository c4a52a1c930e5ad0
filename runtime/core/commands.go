package core

import (
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// Reasons a command is refused.
const (
	refuseStaleBank   = "the bank changed since this skill was chosen"
	refuseNoSkill     = "no such skill in the bank"
	refuseBadLatent   = "latent does not fit the bank"
	refuseFaulted     = "a fault is latched: reset (estop/clear) first"
	refuseNotStanding = "the robot must stand before it runs"
	refuseNotReady    = "not calibrated yet"
	refuseNoLoader    = "this runtime loads no banks at run time"
	refuseLoaderBusy  = "a bank load is already in progress"
	refuseUnknown     = "unknown command"
	refuseRates       = "the new bank's link or policy rate differs from the running one's"
)

// drainCommands applies every queued operator command, at a policy tick.
func (c *Core) drainCommands(in *Input) {
	var cmd corebus.Command
	for c.commands.Poll(&cmd) {
		if c.nApplied < len(c.applied) {
			c.applied[c.nApplied] = cmd
			c.nApplied++
		}
		c.recalled = corebus.RecallResult{Valid: cmd.Kind == corebus.KindRecall, Index: -1}
		ok, why := c.apply(in, &cmd)
		if cmd.ID != "" || cmd.ReplyTo != "" {
			ev := corebus.Event{Kind: corebus.EventCommandDone, OK: ok, Reason: why,
				Command: corebus.CommandRef{Kind: cmd.Kind, ID: cmd.ID, ReplyTo: cmd.ReplyTo}}
			ev.Recalled = c.recalled
			c.emit(ev)
		}
	}
}

func (c *Core) apply(in *Input, cmd *corebus.Command) (bool, string) {
	switch cmd.Kind {
	case corebus.KindSkill:
		return c.applySkill(in.Now, &cmd.Skill)
	case corebus.KindRecall:
		return c.applyRecall(in.Now, &cmd.Recall)
	case corebus.KindMode:
		c.settling = false // the operator decides from here
		return c.applyMode(in, cmd.Mode)
	case corebus.KindEStop:
		c.estop = true
		c.trip(in.Now, faultOperatorEStop, reasonOperatorEStop)
		return true, ""
	case corebus.KindEStopClear:
		return c.reset(in)
	case corebus.KindVelocity:
		c.velocity = [3]float64{cmd.Velocity.Vx, cmd.Velocity.Vy, cmd.Velocity.YawRate}
		return true, ""
	case corebus.KindGoal:
		c.goal = [3]float64{cmd.Goal.X, cmd.Goal.Y, cmd.Goal.Yaw}
		c.switcher.newRoute()
		return true, ""
	case corebus.KindHeartbeat:
		return true, ""
	case corebus.KindStandStill:
		if c.phase == PhaseRun {
			c.hold(in.Now, reasonDeadMan)
		}
		return true, ""
	case corebus.KindBank:
		if c.cfg.RequestBank == nil {
			return false, refuseNoLoader
		}
		if !c.cfg.RequestBank(*cmd) {
			return false, refuseLoaderBusy
		}
		return true, ""
	}
	return false, refuseUnknown
}

func (c *Core) applySkill(now time.Duration, sel *corebus.SkillSelection) (bool, string) {
	if sel.By == corebus.SelectByLatent {
		b := c.bank.Bank
		if len(sel.Latent) != b.LatentDim {
			return false, refuseBadLatent
		}
		nearest, _, err := b.Nearest(sel.Latent)
		if err != nil {
			return false, refuseBadLatent
		}
		if err := c.bank.policies[nearest.Slot].SetLatent(sel.Latent); err != nil {
			return false, refuseBadLatent
		}
		from := c.active
		c.slot = nearest.Slot
		c.active = corebus.ActiveSkill{Source: corebus.SkillLatent, Index: -1}
		c.switched(now, from, reasonOperator)
		return true, ""
	}
	if sel.Generation != c.catalogue.Load().Generation {
		return false, refuseStaleBank
	}
	from := c.active
	if err := c.selectLatent(sel.Index); err != nil {
		return false, refuseNoSkill
	}
	c.switched(now, from, reasonOperator)
	return true, ""
}

// switched finishes a switch an operator asked for: blend into the new skill and report it.
func (c *Core) switched(now time.Duration, from corebus.ActiveSkill, reason string) {
	c.beginBlend(now)
	c.switcher.handOver()
	ev := eventSwitch(from, c.active, reason)
	ev.Recalled = c.recalled
	c.emit(ev)
}

// selectLatent makes bank latent i the running skill.
func (c *Core) selectLatent(i int) error {
	s, err := c.bank.Bank.ByIndex(i)
	if err != nil {
		return err
	}
	if err := c.bank.policies[s.Slot].SetLatent(s.Z); err != nil {
		return err
	}
	c.slot = s.Slot
	c.active = corebus.ActiveSkill{Source: corebus.SkillBank, Index: i}
	return nil
}

func (c *Core) applyMode(in *Input, m corebus.Mode) (bool, string) {
	switch m {
	case corebus.ModeDamp:
		c.enter(PhaseDamp, in.Now, reasonOperator)
		return true, ""
	case corebus.ModeStop:
		if c.phase != PhaseOff {
			c.enter(PhaseStop, in.Now, reasonOperator)
		}
		return true, ""
	}
	if c.fault != "" || c.estop {
		return false, refuseFaulted
	}
	if !c.calibrated() {
		return false, refuseNotReady
	}
	switch m {
	case corebus.ModeStand:
		switch c.phase {
		case PhaseRun:
			c.hold(in.Now, reasonOperator)
		case PhaseDamp, PhaseStop, PhaseOff:
			c.startStandUp(in.Now)
		}
		return true, ""
	case corebus.ModeRun:
		switch c.phase {
		case PhaseHold:
			c.startRun(in.Now, reasonOperator)
		case PhaseRun:
		default:
			return false, refuseNotStanding
		}
		return true, ""
	}
	return false, refuseUnknown
}

// swapOfferedBank installs a bank the driver loaded, unless a skill is running.
func (c *Core) swapOfferedBank() {
	o := c.offered.Load()
	if o == nil || (c.phase == PhaseRun && o.err == nil) {
		return
	}
	c.offered.Store(nil)
	ev := corebus.Event{Kind: corebus.EventBankLoad, BankPath: o.path, Command: o.ref}
	switch {
	case o.err != nil:
		ev.Reason = o.err.Error()
	case o.bank.Bank.Contract.LinkHz != c.bank.Bank.Contract.LinkHz || o.bank.Bank.Contract.PolicyHz != c.bank.Bank.Contract.PolicyHz:
		ev.Reason = refuseRates
	default:
		old := c.bank
		c.bank = o.bank
		if err := c.selectLatent(0); err != nil {
			c.bank = old
			ev.Reason = refuseNoSkill
			break
		}
		ev.OK = true
		c.setGains(o.bank)
		c.catalogue.Store(o.bank.catalogue)
		c.live.Store(o.bank)
	}
	c.emit(ev)
}

// publish stores the state snapshot for other goroutines.
func (c *Core) publish(in *Input) {
	s := &c.snap
	s.Mode = c.phase.Mode()
	s.EStop = c.estop
	s.Fault = c.fault
	s.Skill = c.active
	s.Loop.Ticks = c.ticks
	s.Loop.PolicyTicks = c.ticks / c.decim
	st := c.est.State()
	s.Robot.BaseLinVel, s.Robot.BaseAngVel, s.Robot.Attitude = st.LinVel, st.AngVel, st.Attitude
	s.Robot.JointPos, s.Robot.JointVel, s.Robot.JointTorque = c.js.Q, c.js.Qd, c.js.Tau
	c.state.Store(s)
	c.monitor.Store(s)
}
