package nn

import (
	"math"
	"testing"
)

func TestLogSumExp(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		x    []float64
		want float64
	}{
		{"small", []float64{1, 2, 3}, 3 + math.Log(1+math.Exp(-1)+math.Exp(-2))},
		{"past float32 overflow", []float64{1000, 1000}, 1000 + math.Log(2)},
		{"very negative", []float64{-1000, -1001}, -1000 + math.Log1p(math.Exp(-1))},
		{"one -Inf", []float64{math.Inf(-1), 0}, 0},
		{"all -Inf", []float64{math.Inf(-1), math.Inf(-1)}, math.Inf(-1)},
		{"+Inf", []float64{inf, 0}, inf},
		{"empty", nil, math.Inf(-1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LogSumExp(tc.x)
			if got != tc.want && math.Abs(got-tc.want) > 1e-12*math.Abs(tc.want) {
				t.Fatalf("LogSumExp(%v) = %v, want %v", tc.x, got, tc.want)
			}
		})
	}
	if got := LogSumExp([]float64{1, math.NaN()}); !math.IsNaN(got) {
		t.Fatalf("LogSumExp with NaN = %v", got)
	}
}

func TestLogMeanExpFloat32PastOverflow(t *testing.T) {
	x := []float32{100, 100, 100, 100}
	if got := LogMeanExp(x); math.Abs(got-100) > 1e-12 {
		t.Fatalf("LogMeanExp = %v, want 100", got)
	}
}

func TestSoftmaxSumsToOne(t *testing.T) {
	x := []float32{500, 499, -3, 0}
	w := make([]float64, len(x))
	lse := Softmax(x, w)
	s := 0.0
	for _, v := range w {
		s += v
	}
	if math.Abs(s-1) > 1e-12 || math.Abs(w[0]/w[1]-math.E) > 1e-9 {
		t.Fatalf("softmax %v (sum %v)", w, s)
	}
	if math.Abs(lse-(500+math.Log1p(math.Exp(-1)))) > 1e-9 {
		t.Fatalf("lse = %v", lse)
	}
}
