package dataset

import (
	"errors"
	"fmt"
	"math"
)

// Offline is D_O: N transitions (s, a, s', terminal, timeout, episode_start)
// stored as flat row-major slices.
type Offline struct {
	ObsDim, ActDim int
	Obs            []float32 // N x ObsDim
	Act            []float32 // N x ActDim, in [-1, 1]
	NextObs        []float32 // N x ObsDim
	// Terminal marks transitions into an absorbing state: no bootstrapping
	// from NextObs.
	Terminal []bool
	// Timeout marks transitions after which the episode was cut; NextObs is
	// still a real successor.
	Timeout []bool
	// EpisodeStart marks transitions whose Obs is an initial state s0.
	EpisodeStart []bool
}

// Expert is D_E: expert states only, N x ObsDim.
type Expert struct {
	ObsDim int
	Obs    []float32
}

// Len is the number of transitions, read from the terminal column.
func (o *Offline) Len() int { return len(o.Terminal) }

// Len is the number of expert states.
func (e *Expert) Len() int {
	if e.ObsDim <= 0 {
		return 0
	}
	return len(e.Obs) / e.ObsDim
}

// InitialStates returns the indices of the transitions that start an episode.
func (o *Offline) InitialStates() []int {
	var idx []int
	for i, s := range o.EpisodeStart {
		if s {
			idx = append(idx, i)
		}
	}
	return idx
}

// Sentinel conditions of Validate.
var (
	ErrEmptyOffline   = errors.New("dataset: offline set is empty")
	ErrEmptyExpert    = errors.New("dataset: expert set is empty")
	ErrNoInitialState = errors.New("dataset: no transition marked episode_start")
)

// ShapeError reports a column whose length does not fit the declared shape.
type ShapeError struct {
	Field     string
	Len, Want int
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("dataset: %s has %d values, want %d", e.Field, e.Len, e.Want)
}

// DimError reports a non-positive dimension, or expert and offline
// observations of different widths.
type DimError struct {
	Field     string
	Dim, Want int
}

func (e *DimError) Error() string {
	if e.Want == 0 {
		return fmt.Sprintf("dataset: %s must be positive, got %d", e.Field, e.Dim)
	}
	return fmt.Sprintf("dataset: %s is %d, want %d", e.Field, e.Dim, e.Want)
}

// NonFiniteError reports a NaN or infinity at row Row, column Col of Field.
type NonFiniteError struct {
	Field    string
	Row, Col int
	Value    float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("dataset: %s[%d][%d] is %v", e.Field, e.Row, e.Col, e.Value)
}

// ActionRangeError reports an action outside [-1-ActionTolerance, 1+ActionTolerance].
type ActionRangeError struct {
	Row, Col int
	Value    float32
}

func (e *ActionRangeError) Error() string {
	return fmt.Sprintf("dataset: action[%d][%d] = %v is outside [-1, 1]", e.Row, e.Col, e.Value)
}

// ActionTolerance is how far past +-1 a recorded action may lie (float
// round-off of the scaling) before it is an error; training clamps it anyway.
const ActionTolerance = 1e-3

// Validate checks shapes, finiteness, the action range and that there is at
// least one transition and one initial state.
func (o *Offline) Validate() error {
	if o.ObsDim <= 0 {
		return &DimError{Field: "offline observation dimension", Dim: o.ObsDim}
	}
	if o.ActDim <= 0 {
		return &DimError{Field: "action dimension", Dim: o.ActDim}
	}
	n := o.Len()
	if n == 0 {
		return ErrEmptyOffline
	}
	for _, c := range []struct {
		name string
		len  int
		want int
	}{
		{"observations", len(o.Obs), n * o.ObsDim},
		{"actions", len(o.Act), n * o.ActDim},
		{"next observations", len(o.NextObs), n * o.ObsDim},
		{"timeout", len(o.Timeout), n},
		{"episode_start", len(o.EpisodeStart), n},
	} {
		if c.len != c.want {
			return &ShapeError{Field: c.name, Len: c.len, Want: c.want}
		}
	}
	if err := CheckFinite("observations", o.Obs, o.ObsDim); err != nil {
		return err
	}
	if err := CheckFinite("actions", o.Act, o.ActDim); err != nil {
		return err
	}
	if err := CheckFinite("next observations", o.NextObs, o.ObsDim); err != nil {
		return err
	}
	for i, a := range o.Act {
		if math.Abs(float64(a)) > 1+ActionTolerance {
			return &ActionRangeError{Row: i / o.ActDim, Col: i % o.ActDim, Value: a}
		}
	}
	for _, s := range o.EpisodeStart {
		if s {
			return nil
		}
	}
	return ErrNoInitialState
}

// Validate checks that the expert set is non-empty, well shaped and finite.
func (e *Expert) Validate() error {
	if e.ObsDim <= 0 {
		return &DimError{Field: "expert observation dimension", Dim: e.ObsDim}
	}
	if len(e.Obs) == 0 {
		return ErrEmptyExpert
	}
	if len(e.Obs)%e.ObsDim != 0 {
		return &ShapeError{Field: "expert observations", Len: len(e.Obs), Want: len(e.Obs) / e.ObsDim * e.ObsDim}
	}
	return CheckFinite("expert observations", e.Obs, e.ObsDim)
}

// CheckPair validates both sets and that their observations have the same
// width: everything the trainer needs before it starts.
func CheckPair(o *Offline, e *Expert) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := e.Validate(); err != nil {
		return err
	}
	if e.ObsDim != o.ObsDim {
		return &DimError{Field: "expert observation dimension", Dim: e.ObsDim, Want: o.ObsDim}
	}
	return nil
}

// CheckFinite returns a NonFiniteError for the first NaN or infinity of a
// row-major column with cols values per row.
func CheckFinite(field string, x []float32, cols int) error {
	for i, v := range x {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return &NonFiniteError{Field: field, Row: i / cols, Col: i % cols, Value: v}
		}
	}
	return nil
}
