package nn

import (
	"math"
	"testing"
)

func TestAdamFirstStepMovesByLR(t *testing.T) {
	// After one step mhat/sqrt(vhat) = g/|g|: every parameter moves by lr
	// against the sign of its gradient (up to eps).
	a := NewAdam[float64](3, 0.01)
	p := []float64{1, 2, 3}
	a.Step(p, []float64{0.5, -4, 1e-3})
	want := []float64{0.99, 2.01, 2.99}
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-7 {
			t.Fatalf("p[%d] = %v, want %v", i, p[i], want[i])
		}
	}
}

// TestAdamMatchesReference replays PyTorch's update rule written out in
// float64 for a few steps on changing gradients.
func TestAdamMatchesReference(t *testing.T) {
	const lr, b1, b2, eps = 3e-4, 0.9, 0.999, 1e-8
	a := NewAdam[float32](2, lr)
	p := []float32{0.5, -0.25}
	ref := []float64{0.5, -0.25}
	m, v := make([]float64, 2), make([]float64, 2)
	for step := 1; step <= 5; step++ {
		g := []float64{float64(step) * 0.1, -1 / float64(step)}
		for i := range ref {
			m[i] = b1*m[i] + (1-b1)*g[i]
			v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
			mhat := m[i] / (1 - math.Pow(b1, float64(step)))
			vhat := v[i] / (1 - math.Pow(b2, float64(step)))
			ref[i] -= lr * mhat / (math.Sqrt(vhat) + eps)
		}
		a.Step(p, []float32{float32(g[0]), float32(g[1])})
	}
	for i := range p {
		if math.Abs(float64(p[i])-ref[i]) > 1e-6 {
			t.Fatalf("p[%d] = %v, reference %v", i, p[i], ref[i])
		}
	}
	if a.Steps() != 5 {
		t.Fatalf("Steps = %d", a.Steps())
	}
}

func TestAdamMinimisesQuadratic(t *testing.T) {
	a := NewAdam[float32](2, 0.05)
	p, g := []float32{3, -2}, make([]float32, 2)
	for range 2000 {
		g[0], g[1] = 2*(p[0]-1), 2*(p[1]+0.5)
		a.Step(p, g)
	}
	if math.Abs(float64(p[0])-1) > 1e-2 || math.Abs(float64(p[1])+0.5) > 1e-2 {
		t.Fatalf("Adam ended at %v, want [1 -0.5]", p)
	}
}

func TestAdamStepDoesNotAllocate(t *testing.T) {
	a := NewAdam[float32](1000, 1e-3)
	p, g := make([]float32, 1000), make([]float32, 1000)
	for i := range g {
		g[i] = float32(i) - 500
	}
	if n := testing.AllocsPerRun(100, func() { a.Step(p, g) }); n != 0 {
		t.Fatalf("Adam.Step allocates %v times", n)
	}
}
