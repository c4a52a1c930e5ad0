package dualforce

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// randomPsi draws n successor features of dim entries, spread by scale.
func randomPsi(rng *rand.Rand, n, dim int, scale float64) [][]float64 {
	psi := make([][]float64, n)
	for i := range psi {
		psi[i] = make([]float64, dim)
		for k := range psi[i] {
			psi[i][k] = scale * rng.NormFloat64()
		}
	}
	return psi
}

// skillTerm is skill i's VdW term 0.5 l_i^2 - 0.2 l_i^5/l0^3 with its
// nearest neighbour found afresh (small steps keep the same neighbour).
func skillTerm(psi [][]float64, i int, l0 float64) float64 {
	nb, err := skillset.Nearest(psi)
	if err != nil {
		panic(err)
	}
	return vdwTerm(nb.Distance[i], l0)
}

// forceFunc is Force's signature, so the test can hand the check a broken
// derivative.
type forceFunc func(psi [][]float64, nb skillset.Neighbours, l0 float64) [][]float64

// worstForceError is the largest relative error of force against central
// differences of each skill's VdW term over that skill's psi.
func worstForceError(t *testing.T, force forceFunc, psi [][]float64, l0 float64) float64 {
	t.Helper()
	nb, err := skillset.Nearest(psi)
	if err != nil {
		t.Fatal(err)
	}
	g := force(psi, nb, l0)
	worst := 0.0
	for i := range psi {
		worst = max(worst, gradcheck.Compare(psi[i], g[i], func() float64 { return skillTerm(psi, i, l0) }).Worst)
	}
	return worst
}

// brokenForces are derivatives with the mistakes one makes writing this
// one: the check must reject every one of them.
var brokenForces = []struct {
	name  string
	force forceFunc
}{
	{"square instead of cube", func(psi [][]float64, nb skillset.Neighbours, l0 float64) [][]float64 {
		g := Force(psi, nb, l0)
		for i := range g {
			l := nb.Distance[i]
			for k := range g[i] {
				g[i][k] *= (1 - (l/l0)*(l/l0)) / (1 - math.Pow(l/l0, 3))
			}
		}
		return g
	}},
	{"sign flipped", func(psi [][]float64, nb skillset.Neighbours, l0 float64) [][]float64 {
		g := Force(psi, nb, l0)
		for i := range g {
			for k := range g[i] {
				g[i][k] = -g[i][k]
			}
		}
		return g
	}},
	{"no distance factor", func(psi [][]float64, nb skillset.Neighbours, l0 float64) [][]float64 {
		g := make([][]float64, len(psi))
		for i := range psi {
			g[i] = make([]float64, len(psi[i]))
			for k := range g[i] {
				g[i][k] = psi[i][k] - psi[nb.Nearest[i]][k]
			}
		}
		return g
	}},
}

// TestForceIsTheGradientOfTheVdWObjective is the finite-difference check:
// g_i = (1 - (l_i/l0)^3)(psi_i - psi_j*) against central differences of
// 0.5 l_i^2 - 0.2 l_i^5/l0^3 over psi_i, with skills closer than l0
// (repulsion), further (attraction) and both; and every broken variant in
// brokenForces is rejected on the same points.
func TestForceIsTheGradientOfTheVdWObjective(t *testing.T) {
	const tol = 1e-6
	tests := []struct {
		name      string
		n, dim    int
		scale, l0 float64
	}{
		{"repelling: skills closer than l0", 3, 2, 0.3, 1.2},
		{"attracting: skills further than l0", 3, 12, 3, 1},
		{"mixed, many skills", 8, 6, 1, 2.5},
		{"two skills", 2, 6, 1, 4},
	}
	for ti, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ti), 15))
			psi := randomPsi(rng, tc.n, tc.dim, tc.scale)
			nb, _ := skillset.Nearest(psi)
			t.Logf("l/l0 = %.2f", scaled(nb.Distance, tc.l0))
			got := worstForceError(t, Force, psi, tc.l0)
			t.Logf("Force: max relative error %.2e over %d skills x %d features", got, tc.n, tc.dim)
			if got > tol {
				t.Errorf("Force disagrees with finite differences: max relative error %.3e > %g", got, tol)
			}
			for _, broken := range brokenForces {
				name := broken.name
				if e := worstForceError(t, broken.force, psi, tc.l0); e < 100*tol {
					t.Errorf("the check passes a broken derivative (%s): max relative error %.2e", name, e)
				} else {
					t.Logf("broken derivative (%s) caught: max relative error %.2e", name, e)
				}
			}
		})
	}
}

// TestRewardIsTheGradientOverWeights closes the chain to the data: with
// psi_i = sum_s w_i(s) phi(s), beta_i(s) = <phi(s), g_i> is the derivative
// of skill i's VdW term with respect to the weight w_i(s) of each
// transition.
func TestRewardIsTheGradientOverWeights(t *testing.T) {
	const n, rows, dim, l0 = 3, 40, 3, 1.5
	rng := rand.New(rand.NewPCG(7, 15))
	phi := make([]float32, rows*dim)
	for k := range phi {
		phi[k] = float32(rng.NormFloat64())
	}
	w := make([][]float64, n)
	for i := range w {
		w[i] = Dirichlet(rng, rows)
	}
	successor := func() [][]float64 {
		psi := make([][]float64, n)
		for i := range psi {
			psi[i] = make([]float64, dim)
			for r, wr := range w[i] {
				for k := range dim {
					psi[i][k] += wr * float64(phi[r*dim+k])
				}
			}
		}
		return psi
	}
	psi := successor()
	nb, err := skillset.Nearest(psi)
	if err != nil {
		t.Fatal(err)
	}
	g := Force(psi, nb, l0)
	for i := range n {
		beta := make([]float32, rows)
		Reward(phi, g[i], beta)
		grad := make([]float64, rows)
		for r, b := range beta {
			grad[r] = float64(b)
		}
		// beta is float32: agreement to float32 rounding.
		if e := gradcheck.Compare(w[i], grad, func() float64 { return skillTerm(successor(), i, l0) }).Worst; e > 1e-5 {
			t.Errorf("skill %d: beta differs from d(VdW term)/dw by relative %.3e", i, e)
		}
	}
}

func TestObjectiveAndMeanMinDistance(t *testing.T) {
	tests := []struct {
		dist            []float64
		l0, obj, meanMn float64
	}{
		{[]float64{0, 0, 0}, 6, 0, 0},
		// At l = l0 each term is 0.5 l0^2 - 0.2 l0^2 = 0.3 l0^2, its maximum.
		{[]float64{6, 6}, 6, 2 * 0.3 * 36, 6},
		{[]float64{1, 2, 3}, 2, (0.5 - 0.2/8) + (2 - 0.2*32/8) + (4.5 - 0.2*243/8), 2},
	}
	for _, tc := range tests {
		if got := Objective(tc.dist, tc.l0); math.Abs(got-tc.obj) > 1e-12 {
			t.Errorf("Objective(%v, %g) = %g, want %g", tc.dist, tc.l0, got, tc.obj)
		}
		if got := skillset.MeanMinDistance(tc.dist); math.Abs(got-tc.meanMn) > 1e-12 {
			t.Errorf("skillset.MeanMinDistance(%v) = %g, want %g", tc.dist, got, tc.meanMn)
		}
	}
	// Each term peaks at l0: the force vanishes there and changes sign.
	const l0 = 4.0
	for _, l := range []float64{3.9, 4.1} {
		if vdwTerm(l, l0) >= vdwTerm(l0, l0) {
			t.Errorf("term at %g = %g is not below its value %g at l0", l, vdwTerm(l, l0), vdwTerm(l0, l0))
		}
	}
}

func TestMix(t *testing.T) {
	beta, rE := []float32{1, -2, 0}, []float32{3, 3, -1}
	dst := make([]float32, 3)
	for _, tc := range []struct {
		sigma float64
		want  []float32
	}{{1, []float32{3, 3, -1}}, {0, []float32{1, -2, 0}}, {0.25, []float32{1.5, -0.75, -0.25}}} {
		Mix(beta, rE, tc.sigma, dst)
		for r := range dst {
			if math.Abs(float64(dst[r]-tc.want[r])) > 1e-6 {
				t.Errorf("sigma %g: R = %v, want %v", tc.sigma, dst, tc.want)
				break
			}
		}
	}
}

func TestDirichlet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := Dirichlet(rng, 1000), Dirichlet(rng, 1000)
	sumA, diff := 0.0, 0.0
	for i := range a {
		if a[i] <= 0 {
			t.Fatalf("w[%d] = %g, want positive", i, a[i])
		}
		sumA += a[i]
		diff += math.Abs(a[i] - b[i])
	}
	if math.Abs(sumA-1) > 1e-12 {
		t.Errorf("sum %g, want 1", sumA)
	}
	// Two uniform points of the simplex are far apart: E|a_i - b_i| = 1/n
	// per entry for Exp(1) draws, about 1 in l1 in total.
	if diff < 0.5 {
		t.Errorf("two draws are %g apart in l1, want about 1", diff)
	}
}

func scaled(dist []float64, l0 float64) []float64 {
	out := make([]float64, len(dist))
	for i, l := range dist {
		out[i] = l / l0
	}
	return out
}

func TestClipTails(t *testing.T) {
	x := []float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 10}
	// mean 1, standard deviation 3: clipped to [1 - 3k, 1 + 3k].
	for _, tc := range []struct {
		k    float64
		last float32
	}{{1, 4}, {2, 7}, {4, 10}} {
		y := slices.Clone(x)
		ClipTails(y, tc.k)
		if y[9] != tc.last || y[0] != 0 {
			t.Errorf("k %g: %v, want the 10 clipped to %g and the zeros kept", tc.k, y, tc.last)
		}
	}
	ClipTails(nil, 1)
}
