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

// Constraint is the paper's constraint estimate phi = log N + sum w (log w
// - r_E) (w floored at WeightFloor inside the logarithm): KL(d_w || d_E) up
// to a constant, for weights w over the offline set and the imitation
// reward rE of every transition.
func Constraint(w []float64, rE []float32) float64 {
	wr := 0.0
	for i, wi := range w {
		wr += wi * float64(rE[i])
	}
	return Summarise(w).KL - wr
}

// SuccessorFeatures is the offline successor-feature estimate
// psi = sum_i w_i phi(s_i), for phi given as rows of dim values.
func SuccessorFeatures(w []float64, phi []float32, dim int) []float32 {
	psi := make([]float64, dim)
	for i, wi := range w {
		for j, p := range phi[i*dim : (i+1)*dim] {
			psi[j] += wi * float64(p)
		}
	}
	out := make([]float32, dim)
	for j, p := range psi {
		out[j] = float32(p)
	}
	return out
}

// Polyak is a time average of weight vectors: after the k-th Add,
// w <- (1 - alpha_k) w + alpha_k w_k with alpha_k = max(1/k, MinAlpha), so
// the first vector is taken whole and later ones ever less, down to
// MinAlpha (spec/dualforce.md: the paper's time average, floored).
type Polyak struct {
	MinAlpha float64
	// K is the number of vectors added; W the average (nil before the
	// first Add).
	K int
	W []float64
}

// Add folds w into the average and returns it (the Polyak's slice).
func (p *Polyak) Add(w []float64) []float64 {
	p.K++
	alpha := max(1/float64(p.K), p.MinAlpha)
	if p.W == nil {
		p.W = make([]float64, len(w))
	}
	for i, x := range w {
		p.W[i] = (1-alpha)*p.W[i] + alpha*x
	}
	return p.W
}
