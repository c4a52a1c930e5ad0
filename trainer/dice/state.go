package dice

import (
	"errors"
	"fmt"

	"github.com/dualforce/dualforce/trainer/nn"
)

// ValueState is everything of a Value learner that changes while it
// trains: the network's parameters (nn.Conditioned.Params) and the
// optimiser's moments (Adam, and LatentAdam for the latent columns). The
// generator is the caller's.
type ValueState struct {
	Params           []float32
	Adam, LatentAdam nn.AdamState[float32]
}

// ErrState reports a state that does not fit the learner.
var ErrState = errors.New("dice: state does not fit this learner")

// State returns a copy of the learner's state.
func (v *Value) State() ValueState {
	return ValueState{Params: v.V.Params(), Adam: v.opt.State(), LatentAdam: v.V.LatentAdam()}
}

// Restore replaces the learner's state with a copy of s. On error the
// learner is unchanged.
func (v *Value) Restore(s ValueState) error {
	if err := v.V.Restore(v.opt, s.Params, s.Adam, s.LatentAdam); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	return nil
}
