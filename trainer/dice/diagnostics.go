package dice

import (
	"errors"
	"fmt"
	"math"
)

// WeightFloor is the smallest weight whose logarithm the KL estimate takes.
const WeightFloor = 1e-12

// WeightStats summarise a weight vector w over the offline set (sum 1).
type WeightStats struct {
	// ESS is the effective sample size (sum w)^2 / sum w^2: N for uniform
	// weights, 1 when one transition carries everything.
	ESS float64
	// Max is the largest weight.
	Max float64
	// KL is the paper's off-policy estimate of KL(d || d_O):
	// log N + sum w log max(w, WeightFloor).
	KL float64
}

// Summarise computes the WeightStats of w.
func Summarise(w []float64) WeightStats {
	var sum, sumSq, wLogW, mx float64
	for _, x := range w {
		sum += x
		sumSq += x * x
		wLogW += x * math.Log(max(x, WeightFloor))
		mx = max(mx, x)
	}
	return WeightStats{ESS: sum * sum / sumSq, Max: mx, KL: math.Log(float64(len(w))) + wLogW}
}

// ErrLabelLength reports expert labels that do not match the weights.
var ErrLabelLength = errors.New("dice: expert labels and weights differ in length")

// ExpertMass returns the weight on transitions labelled expert. The labels
// are for this diagnostic only: no part of the algorithm reads them.
func ExpertMass(w []float64, isExpert []bool) (float64, error) {
	if len(w) != len(isExpert) {
		return 0, fmt.Errorf("%w: %d weights, %d labels", ErrLabelLength, len(w), len(isExpert))
	}
	m := 0.0
	for i, e := range isExpert {
		if e {
			m += w[i]
		}
	}
	return m, nil
}
