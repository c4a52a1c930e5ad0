package skillset

import (
	"errors"
	"fmt"
	"math"
)

// ErrSkills reports successor features the VdW force cannot act on: fewer
// than two skills, or skills of different feature widths.
var ErrSkills = errors.New("skillset: need at least two skills of one feature width")

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

// MeanMinDistance is the mean over skills of the distance to the nearest
// other skill, the paper's diversity curve.
func MeanMinDistance(dist []float64) float64 {
	s := 0.0
	for _, l := range dist {
		s += l
	}
	return s / float64(len(dist))
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

// SkillKey names the metrics-log key of a per-skill value, e.g.
// SkillKey("phi", 2) = "phi_2".
func SkillKey(name string, skill int) string { return fmt.Sprintf("%s_%d", name, skill) }
