package collect

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/rig"
)

// Fall thresholds on ground truth: a base tilted past the runtime supervisor's attitude limit,
// or lower than this above the terrain under it, has fallen.
const (
	fallAttitude = 0.8  // rad of roll or pitch
	fallHeight   = 0.10 // m of base above the terrain
)

// episode is one rollout to run: a behaviour in a world, with its own random stream.
type episode struct {
	mode, index int // mode number and episode number within the mode
	spec        behave.Spec
	noise       float64 // the mode's ExecutionNoise
	// scenario is the plan's world with the episode's start heading; seed resolves its jitter
	// into layout.
	scenario worlds.Scenario
	seed     uint64
	layout   *worlds.Layout
	steps    int // policy steps before the timeout
	rng      *rand.Rand
}

// rollout is what one episode produced: n transitions and n+1 observations.
type rollout struct {
	obs       []float32 // (n+1) x obsDim
	act       []float32 // n x 12
	reward    []float32 // n
	pos, rpy  []float32 // n x 3, base pose at each transition's first state
	fell      bool      // the last transition ends in a fall or a fault (terminal)
	reachedAt int       // first transition whose s' is inside the goal, -1 if none
	// route is the way past the navigation box, taken by transition routeAt ("" if none).
	route   behave.Route
	routeAt int
}

func (r *rollout) len() int { return len(r.reward) }

// run plays one episode the way a skill runs on the robot: the simulated Solo12 powers on in the
// episode's world behind its master board, the runtime core (through trainer/rig, as in
// evaluation) stands it up, holds it and starts the behaviour as its skill. Observations are the
// core's own, built at its policy ticks; the behaviour acts on ground truth behind the core's
// actor interface.
//
// A fault the core's supervisor latches between two policy ticks (a fall it sees first) ends
// the episode: the transition under way has no next observation, so the episode ends, terminal,
// at the last state the behaviour acted in.
func run(ctx context.Context, p *Plan, ep *episode) (*rollout, error) {
	ctrl, err := behave.New(ep.spec, p.actions, ep.layout, ep.rng)
	if err != nil {
		return nil, err
	}
	var r *rig.Rig
	actor := behave.NewActor(ctrl, func() sim.BaseState { return r.Robot.Sim().Base() }, ep.noise, ep.rng)
	r, err = rig.New(p.bank, robotboard.Config{Scenario: &ep.scenario, Seed: ep.seed}, func(c *core.Config) {
		c.StandUp = rig.DefaultStandUp
		c.Velocity = [3]float64{float64(p.Task.Command[0]), float64(p.Task.Command[1]), float64(p.Task.Command[2])}
		c.Goal = p.Task.Goal(ep.layout)
		c.Switching.Enabled = false
		c.Actor = actor
	})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dim := p.Contract.Layout.Dim()
	ro := &rollout{
		obs:       make([]float32, (ep.steps+1)*dim),
		act:       make([]float32, 0, ep.steps*skills.NumJoints),
		reward:    make([]float32, 0, ep.steps),
		pos:       make([]float32, 0, 3*ep.steps),
		rpy:       make([]float32, 0, 3*ep.steps),
		reachedAt: -1,
	}
	var prev behave.State
	var own [skills.NumJoints]float32
	k := 0 // states the behaviour acted in so far
	err = r.RunSkill(ctx, rig.DefaultSettle, ep.steps, func(t *rig.Tick) (bool, error) {
		if err := actor.Err(); err != nil {
			return true, err
		}
		if t.Fault != "" {
			ro.fell = ro.len() > 0
			return true, nil
		}
		st := *actor.State()
		copy(ro.obs[k*dim:(k+1)*dim], t.Out.Obs)
		if k > 0 {
			ro.act = append(ro.act, own[:]...)
			ro.pos = append(ro.pos, float32(prev.Pos[0]), float32(prev.Pos[1]), float32(prev.Pos[2]))
			ro.rpy = append(ro.rpy, float32(prev.RPY[0]), float32(prev.RPY[1]), float32(prev.RPY[2]))
			ro.reward = append(ro.reward, float32(p.Task.Reward(&prev, &st, ep.layout)))
			if ro.reachedAt < 0 && ReachedGoal(&st, ep.layout) {
				ro.reachedAt = k - 1
			}
			if ro.route == "" {
				if route, ok := behave.RouteTaken(ep.layout, prev.Pos[0], prev.Pos[1], st.Pos[0], st.Pos[1]); ok {
					ro.route, ro.routeAt = route, k-1
				}
			}
			if Fallen(&st, ep.layout) {
				ro.fell = true
				return true, nil
			}
		}
		if k == ep.steps {
			return true, nil
		}
		prev, own = st, *actor.Own()
		k++
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	ro.obs = ro.obs[:(ro.len()+1)*dim]
	return ro, nil
}

// Fallen reports a base past the attitude limit or too close to the terrain under it: the
// dataset's terminal states, and a fall in evaluation.
func Fallen(s *behave.State, l *worlds.Layout) bool {
	return math.Abs(s.RPY[0]) > fallAttitude || math.Abs(s.RPY[1]) > fallAttitude ||
		s.Pos[2]-behave.TerrainHeight(l, s.Pos[0], s.Pos[1]) < fallHeight
}

// ReachedGoal reports a base within the goal disc of l (false without a goal).
func ReachedGoal(s *behave.State, l *worlds.Layout) bool {
	if l == nil || l.Goal == nil {
		return false
	}
	return math.Hypot(s.Pos[0]-l.Goal.X, s.Pos[1]-l.Goal.Y) < l.Goal.Radius
}
