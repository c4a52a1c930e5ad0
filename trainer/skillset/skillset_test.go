package skillset

import (
	"errors"
	"math"
	"testing"

	"github.com/dualforce/dualforce/trainer/internal/gradcheck"
)

func TestNearest(t *testing.T) {
	psi := [][]float64{{0, 0}, {3, 4}, {0, 1}, {0, 6}}
	nb, err := Nearest(psi)
	if err != nil {
		t.Fatal(err)
	}
	wantJ, wantL := []int{2, 3, 0, 1}, []float64{1, math.Sqrt(13), 1, math.Sqrt(13)}
	for i := range psi {
		if nb.Nearest[i] != wantJ[i] || math.Abs(nb.Distance[i]-wantL[i]) > 1e-12 {
			t.Errorf("skill %d: nearest %d at %g, want %d at %g", i, nb.Nearest[i], nb.Distance[i], wantJ[i], wantL[i])
		}
	}
	// A tie goes to the lowest index.
	if nb, _ := Nearest([][]float64{{0}, {1}, {-1}}); nb.Nearest[0] != 1 {
		t.Errorf("tie: nearest of skill 0 is %d, want 1", nb.Nearest[0])
	}
	for _, bad := range [][][]float64{nil, {{1, 2}}, {{1, 2}, {1}}} {
		if _, err := Nearest(bad); !errors.Is(err, ErrSkills) {
			t.Errorf("Nearest(%v): err %v, want ErrSkills", bad, err)
		}
	}
}

func TestMultiplierStep(t *testing.T) {
	tests := []struct {
		name           string
		mu, phi        float64
		lr             float64
		want           float64
		wantUp, wantDn bool
	}{
		{name: "violated constraint raises mu", mu: 0, phi: 6, lr: 0.1, want: 0.1 * 0.25 * 2},
		{name: "slack lowers mu", mu: 0, phi: 1, lr: 0.1, want: -0.1 * 0.25 * 3},
		{name: "met exactly stays", mu: 1, phi: 4, lr: 0.1, want: 1},
		{name: "clamped above", mu: 2.99, phi: 1000, lr: 100, want: MuBound},
		{name: "clamped below", mu: -2.99, phi: -1000, lr: 100, want: -MuBound},
	}
	const eps = 4.0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu := []float64{tc.mu}
			MultiplierStep(mu, []float64{tc.phi}, eps, tc.lr)
			if math.Abs(mu[0]-tc.want) > 1e-12 {
				t.Errorf("mu = %g, want %g", mu[0], tc.want)
			}
		})
	}
	// The step is the derivative of the loss: a finite-difference check.
	mu, phi := []float64{-1.3, 0.2, 2.1}, []float64{5, 3.5, 4}
	grad := make([]float64, len(mu))
	for i := range mu {
		s := Sigmoid(mu[i])
		grad[i] = s * (1 - s) * (eps - phi[i])
	}
	loss := func() float64 {
		l := 0.0
		for i := range mu {
			l += Sigmoid(mu[i]) * (eps - phi[i])
		}
		return l
	}
	if e := gradcheck.Compare(mu, grad, loss).Worst; e > 1e-6 {
		t.Errorf("multiplier gradient off by relative %.2e", e)
	}
	stepped := append([]float64(nil), mu...)
	MultiplierStep(stepped, phi, eps, 0.5)
	for i := range mu {
		if want := mu[i] - 0.5*grad[i]; math.Abs(stepped[i]-want) > 1e-12 {
			t.Errorf("mu_%d stepped to %g, want %g", i, stepped[i], want)
		}
	}
}
