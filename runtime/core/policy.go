package core

import (
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// policyStep builds the observation, runs the skill's policy and sets new joint targets.
func (c *Core) policyStep(in *Input, out *Output) {
	b := c.bank
	st := c.est.State()
	inp := &c.inputs
	for i := range 3 {
		inp.BaseLinVel[i] = float32(st.LinVel[i])
		inp.BaseAngVel[i] = float32(st.AngVel[i])
		inp.ProjectedGravity[i] = float32(st.ProjectedGravity[i])
		inp.Command[i] = float32(c.velocity[i])
	}
	for j := range c.js.Q {
		inp.JointPos[j] = float32(c.js.Q[j])
		inp.JointVel[j] = float32(c.js.Qd[j])
	}
	inp.PreviousAction = c.prevAction
	if b.navigates {
		p := in.Perception
		if p == nil || !p.Valid {
			c.trip(in.Now, faultPerceptionLost, reasonPerception)
			return
		}
		inp.Target = skills.EncodeTarget(c.goal[0]-p.Position[0], c.goal[1]-p.Position[1], p.Yaw, c.goal[2])
		inp.HeightMap = p.HeightMap
		inp.RemainingTime = float32(b.Bank.Contract.EpisodeSeconds - (in.Now - c.clockFrom).Seconds())
		c.autoSwitch(in.Now, where{X: p.Position[0], Y: p.Position[1], Yaw: p.Yaw, GoalX: c.goal[0], GoalY: c.goal[1]}, &p.HeightMap)
	}
	if err := b.builder.Build(inp, b.obs); err != nil {
		c.trip(in.Now, faultNonFinite, reasonNonFiniteObs)
		return
	}
	var actor Actor = b.policies[c.slot]
	if c.cfg.Actor != nil {
		actor = c.cfg.Actor
	}
	if c.restartAt != 0 {
		// A restart switch is pending: the zero action, the default pose, until the new skill
		// starts afresh (restartSkill).
		c.action = [skills.NumJoints]float32{}
	} else if err := actor.Act(b.obs, c.action[:]); err != nil {
		c.trip(in.Now, faultNonFinite, reasonNonFiniteAct)
		return
	}
	var q [skills.NumJoints]float32
	if err := b.actions.Targets(c.action[:], q[:]); err != nil {
		c.trip(in.Now, faultNonFinite, reasonNonFiniteAct)
		return
	}
	for j := range q {
		c.targets[j] = float64(q[j])
	}
	c.prevAction = c.action
	out.PolicyTick, out.Obs, out.Action = true, b.obs, c.action[:]
}

// autoSwitch gives the running skill's place to another when its route is blocked (the height
// map, or no progress towards the goal), explaining the choice in the event. It never acts under
// a fault: the supervisor's damping has the joints then.
func (c *Core) autoSwitch(now time.Duration, w where, hm *[skills.HeightMapPoints]float32) {
	if c.fault != "" {
		return
	}
	to, outcome := c.switcher.next(now, c.bank.measured, len(c.bank.Bank.Latents), c.active, hm, &w, &c.report)
	switch outcome {
	case keepSkill:
		return
	case noCandidate, keptMeasured:
		reason := reasonNoCandidate
		if outcome == keptMeasured {
			reason = reasonKept
		}
		c.emit(corebus.Event{Kind: corebus.EventRouteBlocked, From: c.active, To: c.active, Reason: reason, Switch: c.report})
		return
	}
	from := c.active
	if c.selectLatent(to) != nil {
		return
	}
	if c.cfg.Switching.Restart > 0 {
		c.beginRestart(now)
	} else {
		c.beginBlend(now)
	}
	reason := reasonObstacle
	if c.report.Trigger == corebus.TriggerNoProgress {
		reason = reasonNoProgress
	}
	ev := eventSwitch(from, c.active, reason)
	ev.Switch = c.report
	c.emit(ev)
}
