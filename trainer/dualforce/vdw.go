package dualforce

import (
	"github.com/dualforce/dualforce/trainer/skillset"
	"math"
	"math/rand/v2"
)

// Objective is the VdW objective sum_i 0.5 l_i^2 - 0.2 l_i^5 / l0^3 of the
// nearest-neighbour distances l_i: each term rises while l_i < l0 and falls
// past it, so skills repel when closer than l0 and attract when further.
func Objective(dist []float64, l0 float64) float64 {
	s := 0.0
	for _, l := range dist {
		s += vdwTerm(l, l0)
	}
	return s
}

func vdwTerm(l, l0 float64) float64 { return 0.5*l*l - 0.2*math.Pow(l, 5)/(l0*l0*l0) }

// Force returns, for every skill i, g_i = (1 - (l_i/l0)^3) (psi_i - psi_j*):
// the gradient of skill i's VdW term 0.5 l_i^2 - 0.2 l_i^5 / l0^3 with
// respect to psi_i, its nearest neighbour held fixed. Since psi_i = sum w_i
// phi(s), the VdW reward beta_i(s) = <phi(s), g_i> (Reward) is the gradient
// of that term with respect to the weight of a transition at s.
func Force(psi [][]float64, nb skillset.Neighbours, l0 float64) [][]float64 {
	g := make([][]float64, len(psi))
	for i := range psi {
		j, l := nb.Nearest[i], nb.Distance[i]
		scale := 1 - math.Pow(l/l0, 3)
		g[i] = make([]float64, len(psi[i]))
		for k := range g[i] {
			g[i][k] = scale * (psi[i][k] - psi[j][k])
		}
	}
	return g
}

// Reward writes beta(s) = <phi(s), g> for every row of phi (rows of
// len(g) features) into dst (one value per row).
func Reward(phi []float32, g []float64, dst []float32) {
	dim := len(g)
	for r := range dst {
		s := 0.0
		for k, p := range phi[r*dim : (r+1)*dim] {
			s += float64(p) * g[k]
		}
		dst[r] = float32(s)
	}
}

// ClipTails clips every value of x to mean +- k standard deviations of x.
func ClipTails(x []float32, k float64) {
	if len(x) == 0 {
		return
	}
	var sum, sq float64
	for _, v := range x {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(x))
	mean := sum / n
	sd := math.Sqrt(max(sq/n-mean*mean, 0))
	lo, hi := float32(mean-k*sd), float32(mean+k*sd)
	for i, v := range x {
		x[i] = min(max(v, lo), hi)
	}
}

// Mix writes the skill's reward R = (1 - sigma) beta + sigma rE, sigma =
// sigmoid(mu), into dst.
func Mix(beta, rE []float32, sigma float64, dst []float32) {
	for r := range dst {
		dst[r] = float32((1-sigma)*float64(beta[r]) + sigma*float64(rE[r]))
	}
}

// Dirichlet draws a point uniformly at random from the probability simplex
// of n entries (Dirichlet(1, ..., 1): normalised Exp(1) draws), the paper's
// initial weights: skills that start identical get a zero VdW reward
// forever.
func Dirichlet(rng *rand.Rand, n int) []float64 {
	w, sum := make([]float64, n), 0.0
	for i := range w {
		w[i] = rng.ExpFloat64()
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}
