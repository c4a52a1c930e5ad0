package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestConditionedIsTheMLPOnXAndZ: the folded network computes, and trains
// like, the plain MLP on [x ; z] it was initialised as: same outputs, and
// after Adam steps on the same loss the same parameters (to float32
// rounding: the fold sums in another order).
func TestConditionedIsTheMLPOnXAndZ(t *testing.T) {
	const x, latent, rows = 5, 3, 7
	sizes := []int{x, 8, 4}
	c, err := NewConditioned[float32](rand.New(rand.NewPCG(1, 2)), sizes, latent, Tanh, Identity)
	if err != nil {
		t.Fatal(err)
	}
	full, err := NewMLP[float32](rand.New(rand.NewPCG(1, 2)), []int{x + latent, 8, 4}, Tanh, Identity)
	if err != nil {
		t.Fatal(err)
	}
	w, b := c.FirstLayer(latent)
	if !slices.Equal(w, full.Layers[0].W) || !slices.Equal(b, full.Layers[0].B) {
		t.Fatal("first layer differs from the MLP on [x ; z] of the same seed")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	in, inZ := make([]float32, rows*x), make([]float32, rows*(x+latent))
	z := []float32{0.5, -1, 2}
	for r := range rows {
		for j := range x {
			in[r*x+j] = float32(rng.NormFloat64())
			inZ[r*(x+latent)+j] = in[r*x+j]
		}
		copy(inZ[r*(x+latent)+x:], z)
	}
	if err := c.SetLatent(z); err != nil {
		t.Fatal(err)
	}
	opt, fullOpt := c.NewOptimiser(1e-2), NewAdam[float32](len(full.Params()), 1e-2)
	var tp, ftp Tape[float32]
	dOut := make([]float32, rows*4)
	for step := range 20 {
		out := c.Net.Forward(&tp, in, rows)
		fout := full.Forward(&ftp, inZ, rows)
		worst := 0.0
		for i := range out {
			worst = max(worst, math.Abs(float64(out[i]-fout[i])))
			dOut[i] = out[i] // loss 0.5 |out|^2
		}
		if worst > 1e-5 {
			t.Fatalf("step %d: outputs differ by %g", step, worst)
		}
		c.Net.ZeroGrad()
		c.Net.Backward(&tp, dOut, nil)
		c.Step(opt)
		full.ZeroGrad()
		full.Backward(&ftp, dOut, nil)
		fullOpt.Step(full.Params(), full.Grads())
	}
	w, b = c.FirstLayer(latent)
	for i := range w {
		if math.Abs(float64(w[i]-full.Layers[0].W[i])) > 1e-5 {
			t.Fatalf("after 20 steps W0[%d] = %v, the MLP's %v", i, w[i], full.Layers[0].W[i])
		}
	}
	for i := range b {
		if math.Abs(float64(b[i]-full.Layers[0].B[i])) > 1e-5 {
			t.Fatalf("after 20 steps b0[%d] = %v, the MLP's %v", i, b[i], full.Layers[0].B[i])
		}
	}
	// Params round-trips through SetParams with the latent kept.
	p := c.Params()
	back, _ := NewConditioned[float32](rand.New(rand.NewPCG(9, 9)), sizes, latent, Tanh, Identity)
	if err := back.SetLatent(z); err != nil {
		t.Fatal(err)
	}
	if err := back.SetParams(p); err != nil || !slices.Equal(back.Params(), p) || !slices.Equal(back.Net.Layers[0].B, c.Net.Layers[0].B) {
		t.Fatalf("SetParams(Params()) does not round-trip: %v", err)
	}
}

// TestConditionedWithoutLatentIsThePlainMLP: latent width 0 draws and steps
// exactly as NewMLP and Adam do, bit for bit.
func TestConditionedWithoutLatentIsThePlainMLP(t *testing.T) {
	c, err := NewConditioned[float32](rand.New(rand.NewPCG(5, 6)), []int{4, 6, 2}, 0, ReLU, Identity)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewMLP[float32](rand.New(rand.NewPCG(5, 6)), []int{4, 6, 2}, ReLU, Identity)
	if !slices.Equal(c.Params(), m.Params()) || c.SetLatent(nil) != nil || c.SetLatent([]float32{1}) == nil {
		t.Fatal("latent width 0 is not the plain MLP")
	}
}
