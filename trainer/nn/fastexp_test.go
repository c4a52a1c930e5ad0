package nn

import (
	"math"
	"testing"
)

func TestExp32(t *testing.T) {
	worst := 0.0
	for x := -87.0; x <= 88.5; x += 0.0037 {
		got, want := float64(exp32(float32(x))), math.Exp(float64(float32(x)))
		worst = max(worst, math.Abs(got-want)/want)
	}
	t.Logf("largest relative error on [-87, 88.5]: %.2e", worst)
	if worst > 3e-7 {
		t.Fatalf("exp32 relative error %.2e", worst)
	}
	for _, tc := range []struct{ x, want float32 }{{-100, 0}, {0, 1}, {float32(math.Inf(1)), float32(math.Inf(1))}, {float32(math.Inf(-1)), 0}, {100, float32(math.Inf(1))}} {
		if got := exp32(tc.x); got != tc.want {
			t.Errorf("exp32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if got := exp32(float32(math.NaN())); got == got {
		t.Errorf("exp32(NaN) = %v", got)
	}
}
