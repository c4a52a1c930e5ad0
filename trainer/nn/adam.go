package nn

import "math"

// Adam is the Adam optimiser (Kingma & Ba) with PyTorch's update rule:
// p -= lr * mhat / (sqrt(vhat) + eps). Its state is allocated once by NewAdam;
// Step never allocates.
type Adam[T Float] struct {
	LR, Beta1, Beta2, Eps float64
	m, v                  []T
	t                     int
}

// NewAdam returns an optimiser for n parameters with betas (0.9, 0.999) and
// eps 1e-8.
func NewAdam[T Float](n int, lr float64) *Adam[T] {
	return &Adam[T]{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, m: make([]T, n), v: make([]T, n)}
}

// Steps is the number of updates taken.
func (a *Adam[T]) Steps() int { return a.t }

// Step applies one update to params given grads (both as long as the
// optimiser's n).
func (a *Adam[T]) Step(params, grads []T) {
	if len(params) != len(a.m) || len(grads) != len(a.m) {
		panic("nn: Adam.Step with slices of the wrong length")
	}
	a.t++
	b1, b2 := T(a.Beta1), T(a.Beta2)
	stepSize := T(a.LR / (1 - math.Pow(a.Beta1, float64(a.t))))
	invSqrtBias2 := 1 / math.Sqrt(1-math.Pow(a.Beta2, float64(a.t)))
	eps := a.Eps
	m, v := a.m[:len(params)], a.v[:len(params)]
	grads = grads[:len(params)]
	for i, g := range grads {
		mi := b1*m[i] + (1-b1)*g
		vi := b2*v[i] + (1-b2)*g*g
		m[i], v[i] = mi, vi
		params[i] -= stepSize * mi / T(math.Sqrt(float64(vi))*invSqrtBias2+eps)
	}
}
