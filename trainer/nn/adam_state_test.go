package nn

import (
	"errors"
	"slices"
	"testing"
)

func TestAdamRestoreContinuesIdentically(t *testing.T) {
	grad := func(step int) []float32 { return []float32{float32(step) * 0.1, -1 / float32(step), 0.3} }
	straight := NewAdam[float32](3, 1e-2)
	p := []float32{0.5, -0.25, 2}
	for step := 1; step <= 6; step++ {
		straight.Step(p, grad(step))
	}

	first := NewAdam[float32](3, 1e-2)
	q := []float32{0.5, -0.25, 2}
	for step := 1; step <= 3; step++ {
		first.Step(q, grad(step))
	}
	saved := first.State()
	snapshot := append([]float32(nil), q...)
	first.Step(q, []float32{100, 100, 100}) // must not leak into the saved copy
	q = snapshot
	resumed := NewAdam[float32](3, 1e-2)
	if err := resumed.Restore(saved); err != nil {
		t.Fatal(err)
	}
	for step := 4; step <= 6; step++ {
		resumed.Step(q, grad(step))
	}
	if !slices.Equal(p, q) || resumed.Steps() != 6 {
		t.Fatalf("resumed %v (step %d), straight %v", q, resumed.Steps(), p)
	}
}

func TestAdamRestoreRejectsWrongSize(t *testing.T) {
	a := NewAdam[float32](3, 1e-3)
	for _, s := range []AdamState[float32]{
		{Steps: 1, M: make([]float32, 2), V: make([]float32, 3)},
		{Steps: 1, M: make([]float32, 3), V: nil},
		{Steps: -1, M: make([]float32, 3), V: make([]float32, 3)},
	} {
		if err := a.Restore(s); !errors.Is(err, ErrShape) {
			t.Errorf("Restore(%d/%d at %d) = %v, want ErrShape", len(s.M), len(s.V), s.Steps, err)
		}
	}
}
