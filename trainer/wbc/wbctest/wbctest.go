// Package wbctest owns the checks the training methods' tests share about their weighted-BC
// learners: that a method hands its learners the reward their draws are tilted by.
package wbctest

import (
	"math"
	"testing"

	"github.com/dualforce/dualforce/trainer/wbc"
)

// CheckTiltedBy checks that l's draws are tilted by exp(tilt r): given equal weights, the rows l
// resamples follow exp(tilt r_i) (systematic resampling: each count within 1 of its
// expectation). It leaves l's weights all 1, its draws following the tilt alone.
func CheckTiltedBy(t testing.TB, name string, l *wbc.Learner, r []float32, tilt float64) {
	t.Helper()
	ones := make([]float64, len(r))
	want, total := make([]float64, len(r)), 0.0
	for i, x := range r {
		ones[i], want[i] = 1, math.Exp(tilt*float64(x))
		total += want[i]
	}
	if err := l.SetWeights(ones); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	const k = 50 * 1024
	counts := make([]int, len(r))
	for _, row := range l.Resample(k) {
		counts[row]++
	}
	for i, c := range counts {
		if e := k * want[i] / total; math.Abs(float64(c)-e) >= 1 {
			t.Fatalf("%s resamples row %d %d times, want %.2f (draws tilted by exp(%v r))", name, i, c, e, tilt)
		}
	}
}
