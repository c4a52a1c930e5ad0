package nn

import "fmt"

// AdamState is a copy of an optimiser's moments and step count: what a
// checkpoint must keep so that training resumes with the very same updates.
type AdamState[T Float] struct {
	Steps int
	M, V  []T
}

// State returns a copy of the optimiser's state.
func (a *Adam[T]) State() AdamState[T] {
	return AdamState[T]{Steps: a.t, M: append([]T(nil), a.m...), V: append([]T(nil), a.v...)}
}

// Restore replaces the optimiser's state with a copy of s, which must be
// for as many parameters as the optimiser has.
func (a *Adam[T]) Restore(s AdamState[T]) error {
	if len(s.M) != len(a.m) || len(s.V) != len(a.v) || s.Steps < 0 {
		return fmt.Errorf("%w: Adam state for %d/%d parameters at step %d, optimiser has %d",
			ErrShape, len(s.M), len(s.V), s.Steps, len(a.m))
	}
	a.t = s.Steps
	copy(a.m, s.M)
	copy(a.v, s.V)
	return nil
}
