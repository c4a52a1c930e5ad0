package dualforce

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrSkills reports successor features the VdW force cannot act on: fewer
// than two skills, or skills of different feature widths.
var ErrSkills = errors.New("dualforce: need at least two skills of one feature width")

// Neighbours are, for every skill i, its nearest other skill
// j*_i = argmin_{j != i} ||psi_i - psi_j|| (the lowest index on a tie) and
// the distance l_i = ||psi_i - psi_{j*_i}||.
type Neighbours struct {
	Nearest  []int
	Distance []float64
}

// Nearest finds every skill's nearest other skill by the Euclidean distance
// of successor features.
func Nearest(psi [][]float64) (Neighbours, error) {
	n := len(psi)
	if n < 2 {
		return Neighbours{}, fmt.Errorf("%w: %d skills", ErrSkills, n)
	}
	for i := range psi {
		if len(psi[i]) != len(psi[0]) {
			return Neighbours{}, fmt.Errorf("%w: psi_%d has %d features, psi_0 %d", ErrSkills, i, len(psi[i]), len(psi[0]))
		}
	}
	nb := Neighbours{Nearest: make([]int, n), Distance: make([]float64, n)}
	for i := range psi {
		nb.Distance[i] = math.Inf(1)
		for j := range psi {
			if j == i {
				continue
			}
			if d := distance(psi[i], psi[j]); d < nb.Distance[i] {
				nb.Nearest[i], nb.Distance[i] = j, d
			}
		}
	}
	return nb, nil
}

func distance(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		d := a[k] - b[k]
		s += d * d
	}
	return math.Sqrt(s)
}

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

// MeanMinDistance is the mean over skills of the distance to the nearest
// other skill, the paper's diversity curve.
func MeanMinDistance(dist []float64) float64 {
	s := 0.0
	for _, l := range dist {
		s += l
	}
	return s / float64(len(dist))
}

// Force returns, for every skill i, g_i = (1 - (l_i/l0)^3) (psi_i - psi_j*):
// the gradient of skill i's VdW term 0.5 l_i^2 - 0.2 l_i^5 / l0^3 with
// respect to psi_i, its nearest neighbour held fixed. Since psi_i = sum w_i
// phi(s), the VdW reward beta_i(s) = <phi(s), g_i> (Reward) is the gradient
// of that term with respect to the weight of a transition at s.
func Force(psi [][]float64, nb Neighbours, l0 float64) [][]float64 {
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

// Mix writes the skill's reward R = (1 - sigma) beta + sigma rE, sigma =
// sigmoid(mu), into dst.
func Mix(beta, rE []float32, sigma float64, dst []float32) {
	for r := range dst {
		dst[r] = float32((1-sigma)*float64(beta[r]) + sigma*float64(rE[r]))
	}
}

// Sigmoid is 1 / (1 + exp(-x)).
func Sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// MuBound bounds the multipliers: sigmoid saturates past |mu| > 3.
const MuBound = 3

// MultiplierStep takes one gradient-descent step of size lr on
// sum_i sigmoid(mu_i) (eps - phi_i), whose derivative in mu_i is
// sigmoid'(mu_i) (eps - phi_i), and clamps every mu_i to [-MuBound,
// MuBound]. A violated constraint (phi_i > eps) raises mu_i and with it the
// imitation share sigmoid(mu_i) of skill i's reward; slack lowers it.
func MultiplierStep(mu, phi []float64, eps, lr float64) {
	for i := range mu {
		s := Sigmoid(mu[i])
		grad := s * (1 - s) * (eps - phi[i])
		mu[i] = min(max(mu[i]-lr*grad, -MuBound), MuBound)
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
