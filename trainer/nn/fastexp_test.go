package nn

import (
	"math"
	"testing"
)

func TestExpSlice(t *testing.T) {
	var xs []float32
	for x := -87.0; x <= 88; x += 0.0037 {
		xs = append(xs, float32(x))
	}
	want := make([]float64, len(xs))
	for i, x := range xs {
		want[i] = math.Exp(float64(x))
	}
	expSlice(xs)
	worst := 0.0
	for i, w := range want {
		worst = max(worst, math.Abs(float64(xs[i])-w)/w)
	}
	t.Logf("largest relative error on [-87, 88]: %.2e", worst)
	if worst > 3e-7 {
		t.Fatalf("expSlice relative error %.2e", worst)
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, tc := range []struct {
		name string
		in   []float32
		want []float32
	}{
		{"clamped below and above", []float32{-100, 0, 100, inf, float32(math.Inf(-1)), 1, 2, 3, 4}, []float32{float32(math.Exp(-87)), 1, float32(math.Exp(88)), float32(math.Exp(88)), float32(math.Exp(-87))}},
		{"a NaN stays NaN", []float32{1, nan, -200, 0, 0, 0, 0, 0, 0}, []float32{float32(math.E), nan, float32(math.Exp(-87)), 1}},
	} {
		expSlice(tc.in)
		for i, w := range tc.want {
			got := tc.in[i]
			if w != w && got == got || w == w && math.Abs(float64(got-w)) > 3e-7*math.Abs(float64(w)) {
				t.Errorf("%s: e^x[%d] = %v, want %v", tc.name, i, got, w)
			}
		}
	}
	d := []float64{-800, 0, 1}
	expSlice(d)
	if d[0] != 0 || d[1] != 1 || d[2] != math.E {
		t.Errorf("float64: %v, want exact math.Exp", d)
	}
}
