package dice

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// ValueState is everything of a Value learner that changes while it
// trains: the network's parameters (nn.Conditioned.Params) and the
// optimiser's moments (Adam, and LatentAdam for the latent columns), and,
// when its weight passes refresh one block at a time (RefreshRows), the
// number of passes and the values they keep (V of every observation, then
// of every episode end's next observation). The generator is the caller's.
type ValueState struct {
	Params           []float32
	Adam, LatentAdam nn.AdamState[float32]
	Passes           int
	Cache            []float32
}

// ErrState reports a state that does not fit the learner.
var ErrState = errors.New("dice: state does not fit this learner")

// State returns a copy of the learner's state.
func (v *Value) State() ValueState {
	s := ValueState{Params: v.V.Params(), Adam: v.opt.State(), LatentAdam: v.V.LatentAdam()}
	if v.keepsValues() {
		s.Passes, s.Cache = v.passes, append(slices.Clone(v.vObs), v.vEnd...)
	}
	return s
}

// keepsValues says whether weight passes reuse values of earlier ones.
func (v *Value) keepsValues() bool {
	return v.cfg.RefreshRows > 0 && v.cfg.RefreshRows < v.data.Len()
}

// Restore replaces the learner's state with a copy of s. On error the
// learner is unchanged.
func (v *Value) Restore(s ValueState) error {
	n := v.data.Len()
	switch {
	case !v.keepsValues() && (s.Passes != 0 || len(s.Cache) != 0):
		return fmt.Errorf("%w: kept values of %d passes for a learner that keeps none", ErrState, s.Passes)
	case v.keepsValues() && s.Passes < 0:
		return fmt.Errorf("%w: %d passes", ErrState, s.Passes)
	case v.keepsValues() && s.Passes > 0 && len(s.Cache) != n+len(v.ends):
		return fmt.Errorf("%w: %d kept values, want %d", ErrState, len(s.Cache), n+len(v.ends))
	}
	if err := dataset.CheckFinite("kept values", s.Cache, 1); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	if err := v.V.Restore(v.opt, s.Params, s.Adam, s.LatentAdam); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	v.passes = s.Passes
	if s.Passes > 0 {
		copy(v.vObs, s.Cache[:n])
		copy(v.vEnd, s.Cache[n:])
	}
	return nil
}
