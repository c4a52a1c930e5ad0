package collect

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// Fall thresholds on ground truth: a base tilted past the runtime supervisor's attitude limit,
// or lower than this above the terrain under it, has fallen.
const (
	fallAttitude = 0.8  // rad of roll or pitch
	fallHeight   = 0.10 // m of base above the terrain
)

// settleTicks is how long the robot holds the default pose after a reset before the first
// observation: the drop onto the feet is over and the estimator trusts its stance feet.
const settleTicks = 200

// episode is one rollout to run: a behaviour in a layout, with its own random stream.
type episode struct {
	mode, index int // mode number and episode number within the mode
	spec        behave.Spec
	noise       float64 // the mode's ExecutionNoise
	layout      *worlds.Layout
	startYaw    float64 // added to the layout's start heading
	steps       int     // policy steps before the timeout
	rng         *rand.Rand
}

// rollout is what one episode produced: n transitions and n+1 observations.
type rollout struct {
	obs       []float32 // (n+1) x obsDim
	act       []float32 // n x 12
	reward    []float32 // n
	pos, rpy  []float32 // n x 3, base pose at each transition's first state
	fell      bool      // the last transition ends in a fall (terminal)
	reachedAt int       // first transition whose s' is inside the goal, -1 if none
	lastPos   [3]float64
}

func (r *rollout) len() int { return len(r.reward) }

// run plays one episode in e (which must have been built for ep.layout).
func run(e *env, ep *episode, t *Task) (*rollout, error) {
	ctrl, err := behave.New(ep.spec, e.actions, ep.layout, ep.rng)
	if err != nil {
		return nil, err
	}
	start := e.robot.StartPose()
	start.RPY[2] += ep.startYaw
	if err := e.reset(start, settleTicks); err != nil {
		return nil, err
	}
	dim := e.builder.Dim()
	r := &rollout{
		obs:       make([]float32, (ep.steps+1)*dim),
		act:       make([]float32, 0, ep.steps*skills.NumJoints),
		reward:    make([]float32, 0, ep.steps),
		pos:       make([]float32, 0, 3*ep.steps),
		rpy:       make([]float32, 0, 3*ep.steps),
		reachedAt: -1,
	}
	tk := task{command: t.Command, goal: t.Goal(ep.layout), remaining: t.EpisodeSeconds}
	var prev [skills.NumJoints]float32
	if err := e.observe(&tk, &prev, r.obs[:dim]); err != nil {
		return nil, fmt.Errorf("collect: first observation: %w", err)
	}
	base := e.robot.Base()
	st := behave.StateOf(&base, 0)
	for k := range ep.steps {
		var a [skills.NumJoints]float32
		if err := ctrl.Act(&st, &a); err != nil {
			return nil, err
		}
		executed := a
		if ep.noise > 0 {
			for j := range executed {
				executed[j] = float32(min(max(float64(a[j])+ep.noise*ep.rng.NormFloat64(), -1), 1))
			}
		}
		if err := e.step(&executed); err != nil {
			return nil, err
		}
		next := e.robot.Base()
		nst := behave.StateOf(&next, float64(k+1)*behave.PolicyPeriod)
		prev = executed // what the robot was commanded, as the runtime's previous action is
		tk.remaining = t.EpisodeSeconds - nst.Time
		if err := e.observe(&tk, &prev, r.obs[(k+1)*dim:(k+2)*dim]); err != nil {
			return nil, fmt.Errorf("collect: observation %d: %w", k+1, err)
		}
		r.act = append(r.act, a[:]...)
		r.pos = append(r.pos, float32(st.Pos[0]), float32(st.Pos[1]), float32(st.Pos[2]))
		r.rpy = append(r.rpy, float32(st.RPY[0]), float32(st.RPY[1]), float32(st.RPY[2]))
		r.reward = append(r.reward, float32(t.Reward(&st, &nst, ep.layout)))
		if r.reachedAt < 0 && ReachedGoal(&nst, ep.layout) {
			r.reachedAt = k
		}
		st = nst
		if Fallen(&st, ep.layout) {
			r.fell = true
			break
		}
	}
	r.obs = r.obs[:(r.len()+1)*dim]
	r.lastPos = st.Pos
	return r, nil
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
