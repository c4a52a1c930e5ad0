package skills

import (
	"math/rand/v2"
)

// randomMLP returns a network with the given layer sizes, uniform weights
// scaled by 1/sqrt(fan-in), hidden activation act and a linear head.
func randomMLP(rng *rand.Rand, act Activation, sizes ...int) MLP {
	var m MLP
	for i := 0; i+1 < len(sizes); i++ {
		in, out := sizes[i], sizes[i+1]
		d := Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out), Act: act}
		scale := 1 / float32(in)
		for k := range d.W {
			d.W[k] = (2*rng.Float32() - 1) * scale * 2
		}
		for k := range d.B {
			d.B[k] = (2*rng.Float32() - 1) * 0.1
		}
		if i+2 == len(sizes) {
			d.Act = ActNone
		}
		m.Layers = append(m.Layers, d)
	}
	return m
}

func randomVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// referenceForward evaluates m in float64 with the textbook loop: the
// independent reference every optimised path is compared against.
func referenceForward(m MLP, x []float32) []float64 {
	in := make([]float64, len(x))
	for i, v := range x {
		in[i] = float64(v)
	}
	for _, l := range m.Layers {
		y := make([]float64, l.Out)
		for r := range l.Out {
			s := float64(l.B[r])
			for k := range l.In {
				s += float64(l.W[r*l.In+k]) * in[k]
			}
			y[r] = float64(l.Act.apply(float32(s)))
			if l.Act == ActNone {
				y[r] = s
			}
		}
		in = y
	}
	return in
}
