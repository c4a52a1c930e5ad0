package behave

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/gait"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// PolicyPeriod is the time between two actions: the contract's 50 Hz policy rate.
const PolicyPeriod = 1.0 / skills.DefaultPolicyHz

// State is the ground truth a scripted controller reads at a policy step.
type State struct {
	Time   float64    // s since the episode started
	Pos    [3]float64 // base position, world frame, m
	RPY    [3]float64 // base roll, pitch, yaw (Z-Y-X), rad
	LinVel [3]float64 // base linear velocity, base frame, m/s
	AngVel [3]float64 // base angular velocity, base frame, rad/s
}

// StateOf converts the simulator's base state at episode time t.
func StateOf(b *sim.BaseState, t float64) State {
	s := State{Time: t, Pos: b.Pos, RPY: RPY(b.Quat), AngVel: b.AngVel}
	s.LinVel = toBase(b.Quat, b.LinVel)
	return s
}

// RPY returns the Z-Y-X Euler angles (roll, pitch, yaw) of a unit quaternion (w, x, y, z).
func RPY(q [4]float64) [3]float64 {
	w, x, y, z := q[0], q[1], q[2], q[3]
	return [3]float64{
		math.Atan2(2*(w*x+y*z), 1-2*(x*x+y*y)),
		math.Asin(max(-1, min(1, 2*(w*y-z*x)))),
		math.Atan2(2*(w*z+x*y), 1-2*(y*y+z*z)),
	}
}

// toBase rotates a world-frame vector into the frame of unit quaternion q: R(q)^T v.
func toBase(q [4]float64, v [3]float64) [3]float64 {
	w, x, y, z := q[0], -q[1], -q[2], -q[3] // the conjugate rotates world into base
	// v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z)
	cx := y*v[2] - z*v[1]
	cy := z*v[0] - x*v[2]
	cz := x*v[1] - y*v[0]
	return [3]float64{
		v[0] + 2*(w*cx+y*cz-z*cy),
		v[1] + 2*(w*cy+z*cx-x*cz),
		v[2] + 2*(w*cz+x*cy-y*cx),
	}
}

// Controller chooses the next action from the ground truth. Act is called once per policy step.
type Controller interface {
	Act(s *State, a *[skills.NumJoints]float32) error
}

// Kind names a family of behaviours.
type Kind string

// Behaviour families.
const (
	KindWalk     Kind = "walk"
	KindNavigate Kind = "navigate"
	KindRandom   Kind = "random"
)

// Route is the way a navigator takes past the box.
type Route string

// Routes past the box.
const (
	RouteLeft  Route = "left"
	RouteRight Route = "right"
	RouteOver  Route = "over"
)

// Spec describes one behaviour. Fields a kind does not use stay zero.
type Spec struct {
	Kind Kind `json:"kind"`
	// Gait is the trot of walk and navigate; for navigate, VX is the cruise speed and YawRate
	// the largest turning rate.
	Gait gait.Params `json:"gait"`
	// HeadingGain turns heading error into yaw rate (1/s): walk holds the heading it integrates
	// from the commanded yaw rate, navigate points at its next waypoint.
	HeadingGain float64 `json:"heading_gain"`
	// SpeedGain (1/s) integrates the error between the commanded and the measured base-frame
	// velocity into the velocity the gait is asked for: joints tracked by a PD with zero
	// velocity reference sweep shorter strides than their targets, by an amount that depends on
	// height, period and speed.
	SpeedGain float64 `json:"speed_gain"`
	// HeadingDrift is the standard deviation (rad/sqrt(s)) of a random walk added to the
	// heading a walk holds or the bearing a navigator aims at: a drifting, wandering walker.
	HeadingDrift float64 `json:"heading_drift,omitempty"`
	// RampTime is how long (s) the base height takes to move from the standing height to
	// Gait.Height at the start of an episode.
	RampTime float64 `json:"ramp_time"`
	// ActionNoise is the standard deviation of Gaussian noise added to every action.
	ActionNoise float64 `json:"action_noise,omitempty"`
	// RandomStd is the standard deviation of the random policy's actions.
	RandomStd float64 `json:"random_std,omitempty"`
	// Route and Clearance (m between the box's side and the base's path) steer navigate.
	Route     Route   `json:"route,omitempty"`
	Clearance float64 `json:"clearance,omitempty"`
	// TurnFrom, when set, is another route whose approach to the box the navigator heads for
	// first, turning back there to its own: the place and heading a runtime's switch leaves the
	// robot in when a fence blocks that route, with the expert's way on from it.
	TurnFrom Route `json:"turn_from,omitempty"`
	// TurnAt, when positive, puts that turn this far (m) before the line across the box's centre,
	// where a fence in line with the box stands, instead of just short of the own route's first
	// waypoint (0.65 m before that line, beyond the height map's 0.5 m): near enough that a
	// fence there is in the height map as the turn begins, so the turn is what it causes.
	TurnAt float64 `json:"turn_at,omitempty"`
}

// ErrSpec reports a behaviour description that cannot be run.
var ErrSpec = errors.New("behave: invalid spec")

// Validate checks a spec before an episode is started with it.
func (s *Spec) Validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("%w: %s", ErrSpec, fmt.Sprintf(format, a...)) }
	for _, v := range []float64{s.HeadingGain, s.SpeedGain, s.HeadingDrift, s.RampTime, s.ActionNoise, s.RandomStd, s.Clearance, s.TurnAt} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return bad("gains, drift, ramp, noise, std, clearance and turn place must be finite and >= 0")
		}
	}
	if s.TurnAt > 0 && s.TurnFrom == "" {
		return bad("turn at %v m: no route to turn back from", s.TurnAt)
	}
	if s.TurnFrom != "" && s.Kind != KindNavigate {
		return bad("turn from %q: only a navigator has a route", s.TurnFrom)
	}
	switch s.Kind {
	case KindWalk, KindNavigate:
		if err := s.Gait.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrSpec, err)
		}
		if s.Kind == KindNavigate {
			switch s.Route {
			case RouteLeft, RouteRight, RouteOver:
			default:
				return bad("route %q: want left, right or over", s.Route)
			}
			if !(s.Gait.VX > 0) || !(s.Gait.YawRate > 0) {
				return bad("navigate needs a positive cruise speed and turning rate")
			}
			switch s.TurnFrom {
			case "":
			case s.Route:
				return bad("turn from %q: the navigator's own route", s.TurnFrom)
			case RouteLeft, RouteRight, RouteOver:
			default:
				return bad("turn from %q: want left, right or over", s.TurnFrom)
			}
		}
	case KindRandom:
		if !(s.RandomStd > 0) {
			return bad("random policy needs a positive action std")
		}
	default:
		return bad("kind %q: want walk, navigate or random", s.Kind)
	}
	return nil
}

// New builds the controller of spec for one episode in layout (navigate needs its box and goal),
// mapping joint targets to actions with am. rng drives every random choice of the episode.
func New(spec Spec, am skills.ActionMap, layout *worlds.Layout, rng *rand.Rand) (Controller, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := am.Validate(); err != nil {
		return nil, fmt.Errorf("%w: action map: %w", ErrSpec, err)
	}
	switch spec.Kind {
	case KindRandom:
		return &random{std: spec.RandomStd, rng: rng}, nil
	case KindNavigate:
		return newNavigator(spec, am, layout, rng)
	}
	return newWalker(spec, am, layout, rng)
}

// random draws every action from N(0, std^2), clipped to [-1, 1].
type random struct {
	std float64
	rng *rand.Rand
}

func (r *random) Act(_ *State, a *[skills.NumJoints]float32) error {
	for j := range a {
		a[j] = float32(min(max(r.std*r.rng.NormFloat64(), -1), 1))
	}
	return nil
}

// wrap maps an angle to [-pi, pi].
func wrap(a float64) float64 { return math.Remainder(a, 2*math.Pi) }
