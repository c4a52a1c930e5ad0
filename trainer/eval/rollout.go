package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/rig"
)

// Rollout is what one episode of one latent measured.
type Rollout struct {
	// Seed resolves the world's jitter and seeds the sensor noise; StartYaw (rad) was added to
	// the world's start heading.
	Seed     uint64  `json:"seed"`
	StartYaw float64 `json:"start_yaw"`
	// Return is the sum of the withheld task reward over the Steps transitions run.
	Return float64 `json:"return"`
	Steps  int     `json:"steps"`
	// Fell: the episode ended early, in a fault the core latched (Fault) or a fall on ground
	// truth (collect.Fallen).
	Fell  bool   `json:"fell"`
	Fault string `json:"fault,omitempty"`
	// GoalStep is the first transition that ends inside the goal disc, -1 if none.
	GoalStep int `json:"goal_step"`
	// Route is the way past the navigation box (left, right, over; behave.RouteTaken on ground
	// truth), "" if the base never passed it.
	Route behave.Route `json:"route,omitempty"`
	// Psi is the online successor features: the discount-weighted mean of phi over the states
	// the policy acted in.
	Psi []float64 `json:"psi"`
	// VelRMSE is the estimator's base linear velocity error against ground truth (base frame,
	// m/s) per axis and of the whole vector, over the policy ticks.
	VelRMSE     [3]float64 `json:"estimator_vel_rmse"`
	VelRMSENorm float64    `json:"estimator_vel_rmse_norm"`
	// FinalPos is the base's last position (world, m).
	FinalPos [3]float64 `json:"final_pos"`
	// Goal is the goal of a world with one (world x, y and radius, m, as jittered for this
	// rollout) and GoalDistance how far from its centre the base ended: a miss that ends just
	// outside the radius stopped short, one that ends far away went elsewhere.
	Goal         *[3]float64 `json:"goal,omitempty"`
	GoalDistance float64     `json:"final_goal_distance,omitempty"`
	// Ticks is the link ticks simulated, power-on and stand-up included.
	Ticks int `json:"ticks"`
	// Descriptors are the rollout's behaviour on ground truth.
	Descriptors Descriptors `json:"descriptors"`
	// Path is the base's way seen from above, kept for the first Config.Paths rollouts.
	Path *Path `json:"path,omitempty"`
	// Switches are the skill switches the core made by itself (Config.Switching), in order.
	Switches []Switch `json:"switches,omitempty"`
	// NowhereToGo are the times the core found the running skill's route blocked and no latent
	// measured on a clear route (corebus.EventRouteBlocked; To is From, Considered 0).
	NowhereToGo []Switch `json:"nowhere_to_go,omitempty"`
	// Trace holds the per-policy-tick series when Config.Traces is set.
	Trace *Trace `json:"-"`
}

// Trace is a rollout's ground truth and runtime view, one entry per policy tick (state k is the
// state policy step k acted in; the last entry is the state the episode ended in).
type Trace struct {
	Time      []float64    // s since the skill started
	Reward    []float64    // of transition k (one fewer than states)
	Pos       [][3]float64 // world, m
	RPY       [][3]float64 // rad
	Height    []float64    // base above the terrain under it, m
	LinVel    [][3]float64 // ground truth, base frame, m/s
	EstLinVel [][3]float64 // the runtime estimator's, base frame, m/s
	Phi       [][]float32  // features of the observation the policy saw (acting states only)
}

// Switch is one skill switch the core made by itself during a rollout: when, where, from which
// latent to which, and the core's own account of why (corebus.SwitchReport).
type Switch struct {
	Time    float64    `json:"time"` // s since the skill started
	Pos     [2]float64 `json:"pos"`  // base position (world, m) on ground truth
	From    int        `json:"from"` // bank latents
	To      int        `json:"to"`
	Trigger string     `json:"trigger"` // obstacle or no_progress
	Blocked []string   `json:"blocked,omitempty"`
	// World is the fenced world whose measured goal rates ranked the Considered candidates.
	World      string `json:"world,omitempty"`
	Considered int    `json:"considered"`
	Chosen     string `json:"chosen"`
}

// SwitchSummary counts what the core's own switches did over a latent's rollouts.
type SwitchSummary struct {
	Rollouts             int // rollouts with at least one switch
	Switches             int
	Obstacle, NoProgress int // switches by trigger
	Goal, Fell           int // of the rollouts with a switch: reached the goal, fell
	NowhereToGo          int // rollouts whose route was blocked with no latent to switch to
}

// Empty reports that the core neither switched nor found itself with nowhere to go.
func (s SwitchSummary) Empty() bool { return s.Switches == 0 && s.NowhereToGo == 0 }

// NearMisses counts the rollouts of a world with a goal that never reached it and ended
// within within m of its edge.
func NearMisses(rollouts []Rollout, within float64) (near, missed int) {
	for k := range rollouts {
		ro := &rollouts[k]
		if ro.Goal == nil || ro.GoalStep >= 0 {
			continue
		}
		missed++
		if ro.GoalDistance-ro.Goal[2] <= within {
			near++
		}
	}
	return near, missed
}

// SummariseSwitches counts the switches recorded in rollouts.
func SummariseSwitches(rollouts []Rollout) SwitchSummary {
	var s SwitchSummary
	for k := range rollouts {
		ro := &rollouts[k]
		if len(ro.NowhereToGo) > 0 {
			s.NowhereToGo++
		}
		if len(ro.Switches) == 0 {
			continue
		}
		s.Rollouts++
		s.Switches += len(ro.Switches)
		for _, sw := range ro.Switches {
			switch sw.Trigger {
			case corebus.TriggerObstacle.String():
				s.Obstacle++
			case corebus.TriggerNoProgress.String():
				s.NoProgress++
			}
		}
		if ro.GoalStep >= 0 {
			s.Goal++
		}
		if ro.Fell {
			s.Fell++
		}
	}
	return s
}

// rolloutDraw is what rollout k draws from the master seed, the same for every latent.
func rolloutDraw(seed uint64, k int, startYaw float64) (worldSeed uint64, yaw float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	worldSeed = rng.Uint64()
	yaw = startYaw * (2*rng.Float64() - 1)
	return worldSeed, yaw
}

// setCore gives a rollout's core the evaluation's settings (the start latent and goal are the
// rollout's own): every rollout's, and the switching settings Evaluate records.
func (cfg *Config) setCore(c *core.Config) {
	c.StandUp = cfg.StandUp
	c.Velocity = [3]float64{float64(cfg.Task.Command[0]), float64(cfg.Task.Command[1]), float64(cfg.Task.Command[2])}
	c.Switching.Enabled = cfg.Switching
	if cfg.Core != nil {
		cfg.Core(c)
	}
}

// job is everything one rollout needs; the shared parts are read-only.
type job struct {
	cfg       *Config
	subject   Subject
	scenario  *worlds.Scenario
	projector *skills.Projector
	obsStats  skills.Stats // the subject's normaliser: observations back to raw for phi
	index     int          // rollout number
}

// run plays one rollout.
func (j *job) run(ctx context.Context) (ro Rollout, err error) {
	cfg := j.cfg
	seed, yaw := rolloutDraw(cfg.Seed, j.index, cfg.StartYaw)
	ro = Rollout{Seed: seed, StartYaw: yaw, GoalStep: -1}
	sc := *j.scenario
	sc.Start.Yaw += yaw
	layout := sc.Layout(seed) // what the robot is built in: robotboard resolves the same seed
	goal := cfg.Task.Goal(layout)
	r, err := rig.New(j.subject.Bank, cfg.robot(&sc, seed), func(c *core.Config) {
		c.Skill = j.subject.Latent
		c.Goal = goal
		cfg.setCore(c)
	})
	if err != nil {
		return ro, err
	}
	defer func() {
		ro.Ticks = int(r.Driver.Now() / time.Millisecond)
		r.Close()
	}()

	rec := newRecorder(j, &ro, layout)
	steps := cfg.steps()
	err = r.RunSkill(ctx, cfg.Settle, steps, func(t *rig.Tick) (bool, error) {
		base := r.Robot.Sim().Base()
		st := behave.StateOf(&base, t.Time.Seconds())
		// The core switches skills at policy ticks, the ticks RunSkill visits.
		for k := range t.Out.Events {
			switch ev := &t.Out.Events[k]; {
			case ev.Kind == corebus.EventSkillSwitch && ev.Switch.Trigger != corebus.TriggerNone:
				ro.Switches = append(ro.Switches, switchOf(ev, &st))
			case ev.Kind == corebus.EventRouteBlocked:
				ro.NowhereToGo = append(ro.NowhereToGo, switchOf(ev, &st))
			}
		}
		if rec.state(&st, t.Fault, steps) {
			ro.FinalPos = st.Pos
			if g := layout.Goal; g != nil {
				ro.Goal, ro.GoalDistance = &[3]float64{g.X, g.Y, g.Radius}, math.Hypot(st.Pos[0]-g.X, st.Pos[1]-g.Y)
			}
			return true, nil
		}
		return false, rec.act(t.Out.Obs, r.Core.Estimate().LinVel)
	})
	if err != nil {
		return ro, err
	}
	rec.finish()
	return ro, nil
}

// robot is the simulated robot of a rollout in world sc with layout seed.
func (c *Config) robot(sc *worlds.Scenario, seed uint64) robotboard.Config {
	return robotboard.Config{Scenario: sc, Seed: seed, Noise: c.Noise, HostDelay: c.HostDelay}
}

// recorder turns the states of one rollout into its measurements.
type recorder struct {
	j      *job
	ro     *Rollout
	layout *worlds.Layout
	prev   behave.State
	states int
	truth  [3]float64 // ground-truth velocity of the latest state (base frame)

	raw, phi []float32
	psi      []float64
	weight   float64 // discount weight of the next acting state
	weights  float64 // sum of the weights so far
	velSq    [3]float64
	velTicks int
	trace    *Trace
	path     *Path
	desc     descriptorMean
	discount float64
}

func newRecorder(j *job, ro *Rollout, layout *worlds.Layout) *recorder {
	r := &recorder{
		j: j, ro: ro, layout: layout,
		raw: make([]float32, j.subject.Bank.Contract.Layout.Dim()), phi: make([]float32, j.projector.Dim()),
		psi: make([]float64, j.projector.Dim()), weight: 1, discount: j.cfg.discount(),
	}
	if j.cfg.Traces {
		r.trace = &Trace{}
		ro.Trace = r.trace
	}
	if j.index < j.cfg.Paths {
		r.path = &Path{}
		ro.Path = r.path
	}
	return r
}

// state takes the state s reached at a policy tick (or at the tick a fault latched) and reports
// whether the episode is over: a fault, a fall, or steps transitions run.
func (r *recorder) state(s *behave.State, fault string, steps int) bool {
	ro := r.ro
	if r.states > 0 {
		k := r.states - 1
		rew := r.j.cfg.Task.Reward(&r.prev, s, r.layout)
		ro.Return += rew
		ro.Steps = r.states
		if ro.GoalStep < 0 && collect.ReachedGoal(s, r.layout) {
			ro.GoalStep = k
		}
		if ro.Route == "" {
			ro.Route, _ = behave.RouteTaken(r.layout, r.prev.Pos[0], r.prev.Pos[1], s.Pos[0], s.Pos[1])
		}
		if r.trace != nil {
			r.trace.Reward = append(r.trace.Reward, rew)
		}
	}
	height := s.Pos[2] - behave.TerrainHeight(r.layout, s.Pos[0], s.Pos[1])
	r.desc.add(s, height)
	if r.trace != nil {
		t := r.trace
		t.Time = append(t.Time, s.Time)
		t.Pos = append(t.Pos, s.Pos)
		t.RPY = append(t.RPY, s.RPY)
		t.Height = append(t.Height, height)
		t.LinVel = append(t.LinVel, s.LinVel)
	}
	if p := r.path; p != nil {
		p.X, p.Y, p.Height = append(p.X, s.Pos[0]), append(p.Y, s.Pos[1]), append(p.Height, height)
	}
	r.prev, r.truth = *s, s.LinVel
	r.states++
	switch {
	case fault != "":
		ro.Fell, ro.Fault = true, fault
		return true
	case r.states > 1 && collect.Fallen(s, r.layout):
		ro.Fell = true
		return true
	}
	return r.states > steps
}

// act takes the policy's normalised observation at the latest state and the estimator's base
// velocity there.
func (r *recorder) act(obs []float32, est [3]float64) error {
	st := &r.j.obsStats
	for i, v := range obs {
		r.raw[i] = v*max(st.Std[i], st.Epsilon) + st.Mean[i]
	}
	if err := r.j.projector.Project(r.raw, r.phi); err != nil {
		return fmt.Errorf("eval: features: %w", err)
	}
	for i, v := range r.phi {
		r.psi[i] += r.weight * float64(v)
	}
	r.weights += r.weight
	r.weight *= r.discount
	for a := range 3 {
		d := est[a] - r.truth[a]
		r.velSq[a] += d * d
	}
	r.velTicks++
	if r.trace != nil {
		r.trace.EstLinVel = append(r.trace.EstLinVel, est)
		r.trace.Phi = append(r.trace.Phi, append([]float32(nil), r.phi...))
	}
	return nil
}

// switchOf is the record of a switch the core reported at state s.
func switchOf(ev *corebus.Event, s *behave.State) Switch {
	return Switch{
		Time: s.Time, Pos: [2]float64{s.Pos[0], s.Pos[1]},
		From: ev.From.Index, To: ev.To.Index,
		Trigger: ev.Switch.Trigger.String(), Blocked: ev.Switch.Blocked.Names(),
		World: ev.Switch.World, Considered: ev.Switch.Considered, Chosen: ev.Switch.Chosen,
	}
}

func (r *recorder) finish() {
	if r.weights > 0 {
		for i := range r.psi {
			r.psi[i] /= r.weights
		}
	}
	r.ro.Psi = r.psi
	r.ro.Descriptors = r.desc.mean()
	if r.velTicks > 0 {
		sum := 0.0
		for a := range 3 {
			r.ro.VelRMSE[a] = math.Sqrt(r.velSq[a] / float64(r.velTicks))
			sum += r.velSq[a]
		}
		r.ro.VelRMSENorm = math.Sqrt(sum / float64(r.velTicks))
	}
}
