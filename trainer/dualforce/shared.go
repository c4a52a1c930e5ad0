package dualforce

import (
	"fmt"
	"math"

	"github.com/dualforce/dualforce/trainer/dice"
)

// TODO(merge): issue 12 moves these into trainer/dice (dice.SuccessorFeatures,
// dice.Constraint, dice.Polyak, dice.CheckWeights); this file goes when it lands in main.

// successorFeatures is the offline successor-feature estimate
// psi = sum_i w_i phi(s_i), for phi given as rows of dim values.
func successorFeatures(w []float64, phi []float32, dim int) []float64 {
	psi := make([]float64, dim)
	for i, wi := range w {
		for j, p := range phi[i*dim : (i+1)*dim] {
			psi[j] += wi * float64(p)
		}
	}
	return psi
}

// constraint is the paper's estimate phi = log N + sum w (log w - r_E).
func constraint(w []float64, rE []float32) float64 {
	wr := 0.0
	for i, wi := range w {
		wr += wi * float64(rE[i])
	}
	return dice.Summarise(w).KL - wr
}

// polyak is a time average: after the k-th add, w <- (1 - alpha_k) w +
// alpha_k w_k with alpha_k = max(1/k, minAlpha).
type polyak struct {
	minAlpha float64
	k        int
	w        []float64
}

func (p *polyak) add(w []float64) []float64 {
	p.k++
	alpha := max(1/float64(p.k), p.minAlpha)
	for i, x := range w {
		p.w[i] = (1-alpha)*p.w[i] + alpha*x
	}
	return p.w
}

// checkDistribution reports whether w holds n non-negative finite values
// that sum to 1 (to rounding).
func checkDistribution(w []float64, n int) error {
	if len(w) != n {
		return fmt.Errorf("%d weights for %d transitions", len(w), n)
	}
	sum := 0.0
	for i, x := range w {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("w[%d] = %v", i, x)
		}
		sum += x
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("they sum to %v", sum)
	}
	return nil
}
