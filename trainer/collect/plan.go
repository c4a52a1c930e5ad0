package collect

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/gait"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// Scale selects a dataset's size.
type Scale string

// Scales: "paper" reproduces the paper's transition counts; "test" is small enough for tests;
// "small", about 3% of the paper's navigation set and 10% of its locomotion set, is what two
// cores train the whole Dual-Force pipeline on in about an hour (the shipped navigation bank).
const (
	ScaleTest  Scale = "test"
	ScaleSmall Scale = "small"
	ScalePaper Scale = "paper"
)

// The dataset contract's action scale and joint PD gains, measured on the scripted gaits: the
// low (0.19 m) and high (0.28 m) trots and the 8 cm steps over the box need joint targets up to
// about 0.75 rad from the default pose (stance legs carry their gravity share as tau/Kp on top of
// the geometry), so 0.8 keeps them inside [-1,1]; the public 0.25-0.3 would clip them. A damping
// of 0.2 Nm s/rad with zero velocity reference brakes the stance sweep, which the walkers'
// velocity loop makes up for; less damping let the trot wander.
const (
	ActionScale = 0.8
	Kp          = 5.0 // Nm/rad, under the link's 5.1565 ceiling
	Kd          = 0.2 // Nm*s/rad
)

// Jitter varies a mode's gait from episode to episode: each field draws uniformly within
// +-value around the mode's own.
type Jitter struct {
	VX         float64 `json:"vx,omitempty"`
	YawRate    float64 `json:"yaw_rate,omitempty"`
	Height     float64 `json:"height,omitempty"`
	StepHeight float64 `json:"step_height,omitempty"`
	Period     float64 `json:"period,omitempty"`
}

// Mode is one behaviour of a dataset's mix and its share of the transitions.
type Mode struct {
	Name        string      `json:"name"`
	Expert      bool        `json:"expert"`
	Transitions int         `json:"transitions"`
	Spec        behave.Spec `json:"spec"`
	Jitter      Jitter      `json:"jitter"`
	// ExecutionNoise is the standard deviation of Gaussian noise added to the actions the robot
	// executes while the dataset records the behaviour's own actions (DART, Laskey et al. 2017):
	// the data then show how the behaviour recovers from small mistakes, which a policy cloned
	// from it makes.
	ExecutionNoise float64 `json:"execution_noise,omitempty"`
}

// Plan is everything a collection run does: the task, the contract observations and actions
// follow, the modes with their transition quotas, and the master seed.
type Plan struct {
	Task     Task            `json:"task"`
	Scale    Scale           `json:"scale"`
	Seed     uint64          `json:"seed"`
	Contract skills.Contract `json:"-"`
	Modes    []Mode          `json:"modes"`
	// StartYaw is the +- range (rad) of the uniform random heading every episode starts with.
	StartYaw float64 `json:"start_yaw"`
	// OtherSideFence is the share of navigation episodes laid out with a fence: on the side of
	// the box the mode's route does not take (either side, drawn, for the over route and the
	// random policy). A run the runtime switched to another route stands beside a fence, and a
	// skill whose data never showed one in its height map meets a state it does not know.
	// 0: none, the world as it is.
	OtherSideFence float64 `json:"other_side_fence,omitempty"`
	// TurnBack is the share of navigation episodes whose navigator heads first for another way
	// past the box and turns back at it to its own route (behave.Spec.TurnFrom): the left and
	// right routes from the other side, the over route from the fenced side (a side drawn when
	// unfenced). A runtime switch at a fence leaves the robot there, heading for the fence; with
	// OtherSideFence that side is fenced in the data too. 0: none.
	TurnBack float64 `json:"turn_back,omitempty"`
	// FenceOnRoute puts the fence of the left and right routes' fenced episodes (OtherSideFence
	// is their share) on the route's own side: the navigator heads for it on its way, turns in
	// sight of it (FenceSight before it, behave.Spec.TurnFrom and TurnAt) and goes over the box
	// instead. The way to the fence is the route's own with or without one, and the
	// turn comes at its sight, so what the expert does at a fence follows from what its height
	// map shows, as the runtime's switch does. The over route's fenced episodes pass a fence on
	// a drawn side as before. Not with TurnBack.
	FenceOnRoute bool `json:"fence_on_route,omitempty"`
	// scenario is the built-in world of Task.World; bank lends the contract to the runtime
	// core that runs the behaviours (its policy never runs: the behaviour is the core's actor);
	// actions maps the behaviours' joint targets to actions.
	scenario *worlds.Scenario
	bank     *skills.Bank
	actions  skills.ActionMap
	// actionScale is Contract.ActionScale in float64, the unit of the modes' noise.
	actionScale float64
}

// FenceSight is how far before a fence (m, from the line across the box's centre) a navigator
// turns with Plan.FenceOnRoute, within the runtime's look-ahead for walls (0.5 m): the fence then
// fills a few rows of the height map. Turned at its first sight (0.45 m), a clone of the expert
// walked on to about 0.2 m before it reacted, and reached the goal in 1 of 30 rollouts with its
// side fenced (20 of 30 turning at 0.3 m).
const FenceSight = 0.3

// SeedRule documents how episodes draw their randomness, for the manifest.
const SeedRule = "episode j of mode m draws from math/rand/v2 PCG(seed, m<<32|j): first the layout seed (navigation), start heading and gait jitter, with other_side_fence whether the episode is fenced (and for the over route and the random policy on which side; with fence_on_route the left and right routes' fences stand on their own side and they turn there to go over), with turn_back whether a navigator turns back (and for the over route without a fence from which side), then the behaviour's own draws"

// ErrPlan reports a plan that cannot be collected.
var ErrPlan = errors.New("collect: invalid plan")

// counts are a scale's transition totals and episode length.
type counts struct {
	expert, behaviour int
	episodeSeconds    float64
}

var scales = map[string]map[Scale]counts{
	// The paper's locomotion set: 248,751 expert and 996,000 behaviour transitions, 20 s episodes.
	TaskLocomotion: {ScalePaper: {248_751, 996_000, 20}, ScaleSmall: {25_000, 100_000, 20}, ScaleTest: {2_000, 8_000, 4}},
	// The paper's navigation set: 654,501 expert and 749,501 behaviour transitions. 12 s gives
	// the slowest expert route (about 9.5 s measured) time to arrive. The test set holds six
	// expert episodes, too few to learn to reach the goal from (the SMODICE-expert trained on
	// it falls in 77% of its rollouts); the small set holds 33.
	TaskNavigation: {ScalePaper: {654_501, 749_501, 12}, ScaleSmall: {20_000, 23_000, 12}, ScaleTest: {3_600, 3_600, 12}},
}

// NewPlan returns the dataset plan of a task at a scale.
func NewPlan(task string, scale Scale, seed uint64) (*Plan, error) {
	byScale, ok := scales[task]
	if !ok {
		return nil, fmt.Errorf("%w: task %q: want %s or %s", ErrPlan, task, TaskLocomotion, TaskNavigation)
	}
	n, ok := byScale[scale]
	if !ok {
		return nil, fmt.Errorf("%w: scale %q: want %s, %s or %s", ErrPlan, scale, ScaleTest, ScaleSmall, ScalePaper)
	}
	var p *Plan
	var err error
	if task == TaskLocomotion {
		p, err = locomotionPlan(n)
	} else {
		p, err = navigationPlan(n)
	}
	if err != nil {
		return nil, err
	}
	p.Scale, p.Seed, p.actionScale = scale, seed, ActionScale
	return p, p.validate()
}

// MaxActionScale bounds SetActionScale: 2 rad either side of the default pose spans every
// Solo12 joint's range, so a wider scale only coarsens the actions.
const MaxActionScale = 2.0

// SetActionScale makes the plan's contract map an action of 1 to scale rad of joint target
// instead of ActionScale, keeping the behaviours' noise the same in radians: the experts' DART
// noise, the noisy modes' action noise and the random policy's spread are stated in action units
// at ActionScale, so they are multiplied by ActionScale/scale (exactly 1 at ActionScale, so the
// default plans are unchanged bit for bit). Why a wider scale: the navigation expert's over
// route bends its knees past 0.8 rad from the default pose to climb a 0.10 m box, and a clipped
// action cannot show the climb (18% of its rows clipped at 0.8, 1.3% at 1.2; a clone of that
// route reached the goal in 15 of 30 rollouts at 0.8 and 27 of 30 at 1.2).
func (p *Plan) SetActionScale(scale float64) error {
	if !(scale > 0 && scale <= MaxActionScale) {
		return fmt.Errorf("%w: action scale %v: want (0, %v] rad", ErrPlan, scale, MaxActionScale)
	}
	if scale == p.actionScale {
		return nil // validated when it was set
	}
	k := p.actionScale / scale
	for i := range p.Modes {
		m := &p.Modes[i]
		m.ExecutionNoise *= k
		m.Spec.ActionNoise *= k
		m.Spec.RandomStd *= k
	}
	p.actionScale, p.Contract.ActionScale = scale, float32(scale)
	return p.validate()
}

// share is a mode with its fraction of the behaviour transitions.
type share struct {
	Mode
	fraction float64
}

// allot fills the quotas: the expert total split evenly over the expert modes and the behaviour
// total by fraction, rounding so the totals are exact.
func allot(expert []Mode, behaviour []share, n counts) []Mode {
	var modes []Mode
	for i, m := range expert {
		m.Expert = true
		m.Transitions = n.expert / len(expert)
		if i < n.expert%len(expert) {
			m.Transitions++
		}
		modes = append(modes, m)
	}
	left := n.behaviour
	for i, s := range behaviour {
		m := s.Mode
		m.Transitions = int(math.Round(s.fraction * float64(n.behaviour)))
		if i == len(behaviour)-1 {
			m.Transitions = left
		}
		left -= m.Transitions
		modes = append(modes, m)
	}
	return modes
}

func newContract(l skills.Layout, episodeSeconds float64) (skills.Contract, error) {
	c, err := skills.NewContract(l)
	if err != nil {
		return c, err
	}
	c.ActionScale, c.Kp, c.Kd = ActionScale, Kp, Kd
	if _, ok := l.Field(skills.FieldRemainingTime); ok {
		c.EpisodeSeconds = episodeSeconds
	}
	return c, c.Validate()
}

// randomStd is the random policy's action standard deviation: at 0.6 (0.48 rad of target
// noise, slewed at the runtime's rate) about a third of its 10 s locomotion episodes end in a
// fall (6 of 20 measured; 33 of 38 at 0.8), as an early training checkpoint's might.
const randomStd = 0.6

// Gait heights (m): low, middle (the standing pose's) and high trots.
const (
	lowHeight    = 0.19
	middleHeight = 0.24
	highHeight   = 0.28
)

// walk is a trot with heading hold and velocity loop at forward speed vx, height h, yaw rate.
func walk(vx, h, yawRate float64) behave.Spec {
	g := gait.DefaultParams()
	g.VX, g.Height, g.YawRate, g.Kp = vx, h, yawRate, Kp
	return behave.Spec{Kind: behave.KindWalk, Gait: g, HeadingGain: 2, SpeedGain: 2, RampTime: 0.5}
}

// Locomotion task: walk forward at 0.3 m/s.
const locomotionSpeed = 0.3

// expertExecutionNoise is the experts' Mode.ExecutionNoise (in action units, 1 = ActionScale
// rad), the locomotion expert's and the navigation expert's on each of its routes.
const expertExecutionNoise = 0.1

func locomotionPlan(n counts) (*Plan, error) {
	c, err := newContract(skills.Locomotion48(), n.episodeSeconds)
	if err != nil {
		return nil, err
	}
	c.Command = &[3]float32{locomotionSpeed, 0, 0}
	v := locomotionSpeed
	turn := 0.4
	mode := func(name string, s behave.Spec) Mode { return Mode{Name: name, Spec: s} }
	sloppy := walk(v, middleHeight, 0)
	sloppy.SpeedGain, sloppy.HeadingGain = 0, 0.3
	drift := walk(v, middleHeight, 0)
	drift.HeadingDrift = 0.4
	noisy := walk(v, middleHeight, 0)
	noisy.ActionNoise = 0.15
	behaviour := []share{
		{mode("low", walk(v, lowHeight, 0)), 0.10},
		{mode("middle_slow", walk(0.2, middleHeight, 0)), 0.08},
		{mode("high", walk(v, highHeight, 0)), 0.10},
		{mode("low_turn_left", walk(v, lowHeight, turn)), 0.05},
		{mode("low_turn_right", walk(v, lowHeight, -turn)), 0.05},
		{mode("middle_turn_left", walk(v, middleHeight, turn)), 0.05},
		{mode("middle_turn_right", walk(v, middleHeight, -turn)), 0.05},
		{mode("high_turn_left", walk(v, highHeight, turn)), 0.05},
		{mode("high_turn_right", walk(v, highHeight, -turn)), 0.05},
		{Mode{Name: "sloppy", Spec: sloppy, Jitter: Jitter{VX: 0.15, YawRate: 0.3, Height: 0.03, StepHeight: 0.02, Period: 0.08}}, 0.12},
		{mode("drift", drift), 0.08},
		{mode("noisy", noisy), 0.10},
		{mode("random", behave.Spec{Kind: behave.KindRandom, RandomStd: randomStd}), 0.12},
	}
	expert := []Mode{{Name: "expert", Spec: walk(v, middleHeight, 0), ExecutionNoise: expertExecutionNoise}}
	return &Plan{
		Task: Task{
			Name: TaskLocomotion, World: "flat", EpisodeSeconds: n.episodeSeconds,
			Command: [3]float32{locomotionSpeed, 0, 0}, TrackingSigma: 0.15,
		},
		Contract: c,
		Modes:    allot(expert, behaviour, n),
		StartYaw: math.Pi,
	}, nil
}

// Navigation gaits: the route's cruise speed (m/s), turning rate (rad/s), the swing clearance
// over the box (m; the over route climbs, gait.Params.Climb) and the clearance kept beside it (m).
const (
	navSpeed     = 0.5
	navTurnRate  = 1.2
	navOverStep  = 0.08
	navClearance = 0.35
)

// navigate is a navigator on route with the expert's gait.
func navigate(route behave.Route) behave.Spec {
	g := gait.DefaultParams()
	g.VX, g.YawRate, g.Kp = navSpeed, navTurnRate, Kp
	if route == behave.RouteOver {
		g.StepHeight, g.Climb = navOverStep, true
	}
	return behave.Spec{
		Kind: behave.KindNavigate, Gait: g, Route: route, Clearance: navClearance,
		HeadingGain: 3, SpeedGain: 2, RampTime: 0.5,
	}
}

func navigationPlan(n counts) (*Plan, error) {
	c, err := newContract(skills.Navigation171(), n.episodeSeconds)
	if err != nil {
		return nil, err
	}
	routes := []behave.Route{behave.RouteLeft, behave.RouteRight, behave.RouteOver}
	var expert []Mode
	var behaviour []share
	for _, r := range routes {
		expert = append(expert, Mode{Name: string(r), Spec: navigate(r), ExecutionNoise: expertExecutionNoise})
	}
	variant := func(prefix string, r behave.Route, fraction float64, edit func(s *behave.Spec), j Jitter) {
		s := navigate(r)
		edit(&s)
		behaviour = append(behaviour, share{Mode{Name: prefix + "_" + string(r), Spec: s, Jitter: j}, fraction})
	}
	for _, r := range routes {
		variant("slow", r, 0.08, func(s *behave.Spec) { s.Gait.VX = 0.25 }, Jitter{Period: 0.06, StepHeight: 0.01})
		variant("noisy", r, 0.06, func(s *behave.Spec) { s.ActionNoise = 0.15 }, Jitter{})
		variant("wander", r, 0.05, func(s *behave.Spec) { s.HeadingDrift = 0.6 }, Jitter{})
	}
	for _, r := range routes[:2] {
		variant("tight", r, 0.06, func(s *behave.Spec) { s.Clearance = 0 }, Jitter{})
		variant("rushed", r, 0.05, func(s *behave.Spec) { s.Gait.VX, s.SpeedGain = 0.7, 0 }, Jitter{Period: 0.06})
	}
	// Stumbling: low steps of a gait that does not adapt to the box (no Climb).
	variant("stumble", behave.RouteOver, 0.11, func(s *behave.Spec) { s.Gait.StepHeight, s.Gait.Climb = 0.03, false }, Jitter{})
	behaviour = append(behaviour, share{Mode{Name: "random", Spec: behave.Spec{Kind: behave.KindRandom, RandomStd: randomStd}}, 0.10})
	return &Plan{
		Task: Task{
			Name: TaskNavigation, World: "obstacle", EpisodeSeconds: n.episodeSeconds,
			ProgressScale: 50, GoalBonus: 1,
		},
		Contract: c,
		Modes:    allot(expert, behaviour, n),
		StartYaw: 0.15,
	}, nil
}

// validate checks the plan and resolves its world.
func (p *Plan) validate() error {
	if err := p.Contract.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	if p.Contract.PolicyHz != skills.DefaultPolicyHz || p.Contract.LinkHz != skills.DefaultLinkHz {
		// The behaviours step their gaits by behave.PolicyPeriod and the simulator by 1 ms.
		return fmt.Errorf("%w: contract rates %d Hz policy, %d Hz link; the behaviours run at %d and %d",
			ErrPlan, p.Contract.PolicyHz, p.Contract.LinkHz, skills.DefaultPolicyHz, skills.DefaultLinkHz)
	}
	s, err := robotboard.LoadScenario(p.Task.World)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	p.scenario = s
	if p.bank, err = scriptedBank(p.Contract); err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	p.actions = p.Contract.ActionMap()
	if !(p.Task.EpisodeSeconds >= behave.PolicyPeriod) {
		return fmt.Errorf("%w: episode of %v s", ErrPlan, p.Task.EpisodeSeconds)
	}
	expert := 0
	for _, m := range p.Modes {
		if m.Transitions < 0 {
			return fmt.Errorf("%w: mode %q has a negative quota", ErrPlan, m.Name)
		}
		if m.Expert {
			expert += m.Transitions
		}
		if err := m.Spec.Validate(); err != nil {
			return fmt.Errorf("%w: mode %q: %w", ErrPlan, m.Name, err)
		}
	}
	if expert == 0 {
		return fmt.Errorf("%w: no expert transitions: the expert set would be empty", ErrPlan)
	}
	switch f := p.OtherSideFence; {
	case !(f >= 0 && f <= 1):
		return fmt.Errorf("%w: other-side fence share %v: want [0, 1]", ErrPlan, f)
	case f > 0 && (p.Task.Name != TaskNavigation || s.Box == nil || s.Fences != nil):
		return fmt.Errorf("%w: other-side fences need a navigation world with a box and no fences of its own (world %q)", ErrPlan, s.Name)
	}
	switch f := p.TurnBack; {
	case !(f >= 0 && f <= 1):
		return fmt.Errorf("%w: turn-back share %v: want [0, 1]", ErrPlan, f)
	case f > 0 && (p.Task.Name != TaskNavigation || s.Box == nil):
		return fmt.Errorf("%w: turning back needs a navigation world with a box (world %q)", ErrPlan, s.Name)
	}
	if p.FenceOnRoute && !(p.OtherSideFence > 0 && p.TurnBack == 0) {
		return fmt.Errorf("%w: fences on the route need a share of fenced episodes (%v) above 0 and no turning back (%v)", ErrPlan, p.OtherSideFence, p.TurnBack)
	}
	return nil
}

// fenceSide puts a fence on the side of the box that route does not take, or with onRoute the
// side it does (a side drawn from rng for the over route and for none).
func fenceSide(s *worlds.Scenario, route behave.Route, onRoute bool, rng *rand.Rand) {
	left := (route == behave.RouteLeft) == onRoute
	if route != behave.RouteLeft && route != behave.RouteRight {
		left = rng.IntN(2) == 0
	}
	s.Fences = &worlds.Fences{
		Left: left, Right: !left,
		Height: worlds.DefaultFenceHeight, Length: worlds.DefaultFenceLength, Thickness: worlds.DefaultFenceThickness,
	}
}

// scriptedBank is a bank under contract c whose one policy outputs zeros: the runtime core needs
// a bank to stand the robot up and build observations, and collection replaces its policy with a
// behaviour (core.Config.Actor). Its normaliser is the identity, so the core's observations are
// the raw ones a dataset stores.
func scriptedBank(c skills.Contract) (*skills.Bank, error) {
	const latentDim = 1
	c.Normaliser = skills.IdentityStats(c.Layout.Dim())
	in, out := c.Layout.Dim()+latentDim, 2*skills.NumJoints
	b := &skills.Bank{
		Producer: "trainer/collect", Contract: c, LatentDim: latentDim,
		Slots: []skills.Slot{{Policy: skills.MLP{Layers: []skills.Dense{{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}}}}},
		Latents: []skills.Latent{{
			Info: skills.LatentInfo{Name: "scripted", OfflinePsi: make([]float32, c.Features.Dim(c.Layout))},
			Z:    make([]float32, latentDim),
		}},
	}
	return b, b.Validate()
}

// steps is the number of policy steps of a full episode.
func (p *Plan) steps() int { return int(math.Round(p.Task.EpisodeSeconds / behave.PolicyPeriod)) }

// episode draws episode j of mode m: its layout, start heading and jittered behaviour.
func (p *Plan) episode(m, j int) *episode {
	rng := rand.New(rand.NewPCG(p.Seed, uint64(m)<<32|uint64(j)))
	mode := &p.Modes[m]
	ep := &episode{mode: m, index: j, spec: mode.Spec, noise: mode.ExecutionNoise, steps: p.steps(), rng: rng}
	ep.scenario, ep.seed = *p.scenario, rng.Uint64()
	ep.scenario.Start.Yaw += p.StartYaw * (2*rng.Float64() - 1)
	ep.layout = ep.scenario.Layout(ep.seed)
	u := func(half float64) float64 { return half * (2*rng.Float64() - 1) }
	g, jt := &ep.spec.Gait, mode.Jitter
	g.VX += u(jt.VX)
	g.YawRate += u(jt.YawRate)
	g.Height += u(jt.Height)
	g.StepHeight = max(0, g.StepHeight+u(jt.StepHeight))
	g.Period += u(jt.Period)
	// Drawn after everything else, so that a plan without fences collects what it did before.
	if p.OtherSideFence > 0 && rng.Float64() < p.OtherSideFence {
		route := ep.spec.Route
		onRoute := p.FenceOnRoute && (route == behave.RouteLeft || route == behave.RouteRight)
		fenceSide(&ep.scenario, route, onRoute, rng)
		ep.layout = ep.scenario.Layout(ep.seed)
		if onRoute {
			// The over route's climbing gait from the start: the trot's footholds do not
			// switch to climbing mid-stride.
			ep.spec.TurnFrom, ep.spec.Route, ep.spec.TurnAt = route, behave.RouteOver, FenceSight
			ep.spec.Gait.StepHeight += navOverStep - navigate(route).Gait.StepHeight
			ep.spec.Gait.Climb = true
		}
	}
	if p.TurnBack > 0 && ep.spec.Kind == behave.KindNavigate && rng.Float64() < p.TurnBack {
		ep.spec.TurnFrom = turnFrom(ep.spec.Route, ep.scenario.Fences, rng)
	}
	return ep
}

// turnFrom is the route a navigator on route turns back from: the other side for the ways round
// the box; for the way over, the fenced side, or a side drawn from rng with no fence.
func turnFrom(route behave.Route, f *worlds.Fences, rng *rand.Rand) behave.Route {
	switch {
	case route == behave.RouteLeft:
		return behave.RouteRight
	case route == behave.RouteRight:
		return behave.RouteLeft
	case f != nil && f.Left:
		return behave.RouteLeft
	case f != nil && f.Right:
		return behave.RouteRight
	case rng.IntN(2) == 0:
		return behave.RouteLeft
	}
	return behave.RouteRight
}
