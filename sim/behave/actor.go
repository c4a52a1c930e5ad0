package behave

import (
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/skills"
)

// Actor runs a Controller where a skill's policy runs on the robot: behind the runtime core's
// actor interface (runtime/core.Actor), called once per policy tick with the observation, which
// a scripted controller ignores: it reads the simulator's ground truth instead. Its first Act is
// the episode's time 0, each further one a policy period later.
//
// With execution noise the robot is commanded the controller's action plus Gaussian noise of
// that standard deviation (clipped to [-1, 1]) while Own keeps the controller's own action: a
// dataset that records Own shows how the controller recovers from small mistakes (DART, Laskey
// et al. 2017).
type Actor struct {
	ctrl  Controller
	base  func() sim.BaseState
	noise float64
	rng   *rand.Rand
	steps int
	state State
	own   [skills.NumJoints]float32
	err   error
}

// NewActor wraps ctrl; base reads the simulator's base state at the moment of a policy tick,
// and rng draws the execution noise (after the controller's own draws of the same step).
func NewActor(ctrl Controller, base func() sim.BaseState, executionNoise float64, rng *rand.Rand) *Actor {
	return &Actor{ctrl: ctrl, base: base, noise: executionNoise, rng: rng}
}

// Act runs the controller on the ground truth of this policy tick and writes the action the
// robot executes into action.
func (a *Actor) Act(_, action []float32) error {
	b := a.base()
	a.state = StateOf(&b, float64(a.steps)*PolicyPeriod)
	a.steps++
	if err := a.ctrl.Act(&a.state, &a.own); err != nil {
		a.err = err
		return err
	}
	for j, v := range a.own {
		if a.noise > 0 {
			v = float32(min(max(float64(v)+a.noise*a.rng.NormFloat64(), -1), 1))
		}
		action[j] = v
	}
	return nil
}

// State is the ground truth the latest action was chosen in.
func (a *Actor) State() *State { return &a.state }

// Own is the controller's own latest action, before execution noise.
func (a *Actor) Own() *[skills.NumJoints]float32 { return &a.own }

// Err is the controller's error, if one stopped it (the core sees a non-finite action fault).
func (a *Actor) Err() error { return a.err }
