package core

import (
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
		inp.RemainingTime = float32(b.Bank.Contract.EpisodeSeconds - (in.Now - c.since).Seconds())
		if to, ok := c.switcher.next(in.Now, b.Bank, c.active, &p.HeightMap); ok {
			from := c.active
			if c.selectLatent(to) == nil {
				c.emit(eventSwitch(from, c.active, reasonObstacle))
			}
		}
	}
	if err := b.builder.Build(inp, b.obs); err != nil {
		c.trip(in.Now, faultNonFinite, reasonNonFiniteObs)
		return
	}
	if err := b.policies[c.slot].Act(b.obs, c.action[:]); err != nil {
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
