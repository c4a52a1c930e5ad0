package gradcheck

import (
	"math"
	"testing"
)

// loss = sum_i sin(x_i) * x_{i+1}^2, gradient by hand.
func testLoss(x []float64) (func() float64, []float64) {
	loss := func() float64 {
		s := 0.0
		for i := 0; i+1 < len(x); i++ {
			s += math.Sin(x[i]) * x[i+1] * x[i+1]
		}
		return s
	}
	g := make([]float64, len(x))
	for i := 0; i+1 < len(x); i++ {
		g[i] += math.Cos(x[i]) * x[i+1] * x[i+1]
		g[i+1] += 2 * math.Sin(x[i]) * x[i+1]
	}
	return loss, g
}

func TestCompareAcceptsRightGradient(t *testing.T) {
	x := []float64{0.3, -1.2, 2.5, 0.7, -0.4}
	loss, g := testLoss(x)
	if r := Compare(x, g, loss); r.Worst > 1e-8 {
		t.Fatalf("right gradient: worst %.2e at %d", r.Worst, r.At)
	}
}

func TestCheckCatchesBrokenGradient(t *testing.T) {
	x := []float64{0.3, -1.2, 2.5, 0.7, -0.4}
	loss, g := testLoss(x)
	for i := range g {
		for _, frac := range []float64{1e-2, -1e-3} {
			bad := Broken(g, i, frac)
			r := Compare(x, bad, loss)
			if r.Worst < 1e-4 || r.At != i {
				t.Errorf("entry %d off by %g of the largest: worst %.2e at %d, want a failure at %d", i, frac, r.Worst, r.At, i)
			}
		}
	}
	// And Check reports it as a test failure.
	rec := &recorder{TB: t}
	Check(rec, "broken", x, Broken(g, 2, 0.01), loss, 1e-6)
	if !rec.failed {
		t.Fatal("Check did not fail on a broken gradient")
	}
}

// recorder is a testing.TB that records Errorf instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(format string, args ...any) { r.failed = true }
func (r *recorder) Logf(format string, args ...any)   { r.TB.Logf("(recorded) "+format, args...) }
func (r *recorder) Helper()                           {}
