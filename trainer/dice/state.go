package dice

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// State is everything that changes while a Trainer trains: network
// parameters, optimiser moments, the sampling generator and the iteration
// count. A Trainer built by New with the same data, reward and Config and
// then given a State continues exactly as the Trainer that saved it.
type State struct {
	Iteration             int
	Value, Policy         []float32
	ValueAdam, PolicyAdam nn.AdamState[float32]
	RNG                   []byte // math/rand/v2 PCG state (MarshalBinary)
}

// ErrState reports a State that does not fit the Trainer.
var ErrState = errors.New("dice: state does not fit this trainer")

// State returns a copy of the trainer's state.
func (t *Trainer) State() State {
	rng, err := t.src.MarshalBinary()
	if err != nil {
		panic("dice: PCG.MarshalBinary failed: " + err.Error()) // it never does
	}
	return State{
		Iteration: t.iteration,
		Value:     append([]float32(nil), t.V.Params()...),
		Policy:    append([]float32(nil), t.Pi.Net.Params()...),
		ValueAdam: t.vOpt.State(), PolicyAdam: t.piOpt.State(),
		RNG: rng,
	}
}

// Restore replaces the trainer's state with a copy of s. On error the
// trainer is unchanged.
func (t *Trainer) Restore(s State) error {
	nv, np := len(t.V.Params()), len(t.Pi.Net.Params())
	if s.Iteration < 0 || len(s.Value) != nv || len(s.Policy) != np ||
		len(s.ValueAdam.M) != nv || len(s.ValueAdam.V) != nv || s.ValueAdam.Steps < 0 ||
		len(s.PolicyAdam.M) != np || len(s.PolicyAdam.V) != np || s.PolicyAdam.Steps < 0 {
		return fmt.Errorf("%w: iteration %d, %d value and %d policy parameters (Adam %d, %d); trainer has %d and %d",
			ErrState, s.Iteration, len(s.Value), len(s.Policy), len(s.ValueAdam.M), len(s.PolicyAdam.M), nv, np)
	}
	for _, c := range []struct {
		name string
		x    []float32
	}{
		{"value parameters", s.Value}, {"policy parameters", s.Policy},
		{"value Adam moments", s.ValueAdam.M}, {"value Adam moments", s.ValueAdam.V},
		{"policy Adam moments", s.PolicyAdam.M}, {"policy Adam moments", s.PolicyAdam.V},
	} {
		if err := dataset.CheckFinite(c.name, c.x, 1); err != nil {
			return fmt.Errorf("%w: %w", ErrState, err)
		}
	}
	var src rand.PCG
	if err := src.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("%w: generator: %w", ErrState, err)
	}
	// Sizes are checked above, so neither optimiser can refuse its state.
	if err := t.vOpt.Restore(s.ValueAdam); err != nil {
		return err
	}
	if err := t.piOpt.Restore(s.PolicyAdam); err != nil {
		return err
	}
	copy(t.V.Params(), s.Value)
	copy(t.Pi.Net.Params(), s.Policy)
	*t.src = src
	t.iteration = s.Iteration
	return nil
}
