package dice

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestRestoreContinuesBitIdentically trains 6 iterations straight, and 3 +
// save + a fresh trainer restored from the save + 3: the parameters must be
// equal bit for bit.
func TestRestoreContinuesBitIdentically(t *testing.T) {
	data, reward, _ := syntheticSet(1500, 7)
	cfg := smallConfig()
	straight, err := New(data, reward, cfg)
	if err != nil {
		t.Fatal(err)
	}
	iterate := func(tr *Trainer) Diagnostics {
		t.Helper()
		diag, _, err := tr.Iterate()
		if err != nil {
			t.Fatal(err)
		}
		return diag
	}
	for range 6 {
		iterate(straight)
	}

	first, _ := New(data, reward, cfg)
	for range 3 {
		iterate(first)
	}
	saved := first.State()
	iterate(first) // must not change the saved copy
	resumed, _ := New(data, reward, cfg)
	if err := resumed.Restore(saved); err != nil {
		t.Fatal(err)
	}
	var last Diagnostics
	for range 3 {
		last = iterate(resumed)
	}
	if last.Iteration != 6 {
		t.Fatalf("resumed trainer at iteration %d, want 6", last.Iteration)
	}
	if !slices.Equal(straight.V.Params(), resumed.V.Params()) || !slices.Equal(straight.Pi.Net.Params(), resumed.Pi.Net.Params()) {
		t.Fatal("resumed parameters differ from the straight run")
	}
}

func TestRestoreRejectsForeignState(t *testing.T) {
	data, reward, _ := syntheticSet(300, 8)
	tr, err := New(data, reward, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	good := tr.State()
	tests := []struct {
		name string
		edit func(s *State)
	}{
		{"short value", func(s *State) { s.Value = s.Value[1:] }},
		{"short policy Adam", func(s *State) { s.PolicyAdam.V = s.PolicyAdam.V[1:] }},
		{"negative iteration", func(s *State) { s.Iteration = -1 }},
		{"NaN parameter", func(s *State) { s.Policy[3] = float32(math.NaN()) }},
		{"bad generator", func(s *State) { s.RNG = []byte("nope") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tr.State()
			tc.edit(&s)
			if err := tr.Restore(s); !errors.Is(err, ErrState) {
				t.Fatalf("Restore = %v, want ErrState", err)
			}
			if !slices.Equal(tr.V.Params(), good.Value) || !slices.Equal(tr.Pi.Net.Params(), good.Policy) {
				t.Fatal("a refused state changed the trainer")
			}
		})
	}
}
