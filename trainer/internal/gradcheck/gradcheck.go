// Package gradcheck owns the trainer's finite-difference check of
// hand-written derivatives: central differences in float64 compared entry by
// entry with an analytic gradient. Every package with a hand-written
// backward pass tests it through here, and TestCheckCatchesBrokenGradient
// shows that the check fails when a gradient is wrong.
package gradcheck

import (
	"math"
	"testing"
)

// Step is the central-difference step. In float64 it balances truncation
// error (O(h^2)) against rounding (about 1e-16 * |loss| / h).
const Step = 1e-6

// Result is the worst disagreement found.
type Result struct {
	// Worst is the largest relative error |fd - g| / max(|fd| + |g|, floor)
	// over all entries, where floor is 1e-3 of the largest analytic entry
	// (entries far below it are rounding noise in the difference).
	Worst float64
	// At is the entry where Worst occurs (-1 for an empty x).
	At int
	// Analytic and Numeric are the two values at At.
	Analytic, Numeric float64
}

// Compare differentiates loss numerically over every entry of x (restoring
// each after use) and compares with grad, the analytic d loss / d x.
func Compare(x, grad []float64, loss func() float64) Result {
	if len(grad) != len(x) {
		panic("gradcheck: gradient and point differ in length")
	}
	floor := 1e-9
	for _, g := range grad {
		floor = max(floor, 1e-3*math.Abs(g))
	}
	r := Result{At: -1}
	for i := range x {
		orig := x[i]
		x[i] = orig + Step
		up := loss()
		x[i] = orig - Step
		down := loss()
		x[i] = orig
		fd := (up - down) / (2 * Step)
		e := math.Abs(fd-grad[i]) / max(math.Abs(fd)+math.Abs(grad[i]), floor)
		if e > r.Worst || r.At < 0 {
			r = Result{Worst: e, At: i, Analytic: grad[i], Numeric: fd}
		}
	}
	return r
}

// Check runs Compare, logs the worst relative error under name and fails t
// when it exceeds tol.
func Check(t testing.TB, name string, x, grad []float64, loss func() float64, tol float64) Result {
	t.Helper()
	r := Compare(x, grad, loss)
	t.Logf("%s: %d entries, max relative error %.2e (entry %d)", name, len(x), r.Worst, r.At)
	if r.Worst > tol {
		t.Errorf("%s: gradient check failed: max relative error %.3e at %d (analytic %g, numeric %g)",
			name, r.Worst, r.At, r.Analytic, r.Numeric)
	}
	return r
}

// Broken returns a copy of grad with entry i changed by frac of the largest
// entry's magnitude: a deliberately wrong gradient that a check must catch.
func Broken(grad []float64, i int, frac float64) []float64 {
	out := append([]float64(nil), grad...)
	big := 0.0
	for _, g := range grad {
		big = max(big, math.Abs(g))
	}
	out[i] += frac * big
	return out
}
