package fre

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/prep"
)

// syntheticSource is n locomotion48 states on a curved 6-dimensional
// manifold (as robot states are: far fewer degrees of freedom than numbers),
// about unit scale (physical units: 0.3 per unit), phi = the standardised
// joint positions, and an r_E that prefers one half-space, clipped like the
// discriminator's.
func syntheticSource(n int, seed uint64) *Source {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		panic(err)
	}
	layout := c.Layout
	d := layout.Dim()
	rng := rand.New(rand.NewPCG(seed, 1))
	src := &Source{Task: prep.TaskLocomotion, Contract: c, Dim: d, FeatureDim: skills.NumJoints,
		States: make([]float32, n*d), Phi: make([]float32, n*skills.NumJoints), RE: make([]float32, n)}
	for j := range c.Normaliser.Std {
		c.Normaliser.Std[j] = 0.3
	}
	q, _ := layout.Field(skills.FieldJointPos)
	const intrinsic = 6
	mix := make([]float64, d*intrinsic)
	for i := range mix {
		mix[i] = rng.NormFloat64() / math.Sqrt(intrinsic)
	}
	h := make([]float64, intrinsic)
	for i := range n {
		for k := range h {
			h[k] = rng.NormFloat64()
		}
		s := src.States[i*d : (i+1)*d]
		for j := range s {
			v := 0.0
			for k, hk := range h {
				v += mix[j*intrinsic+k] * hk
			}
			s[j] = float32(1.5*math.Tanh(v) + 0.05*rng.NormFloat64())
		}
		copy(src.Phi[i*skills.NumJoints:], s[q.Offset:q.Offset+q.Dim])
		src.RE[i] = float32(min(max(3*math.Tanh(float64(s[0]+s[q.Offset]-0.5*s[5])), -6.9), 6.9))
	}
	return src
}

// mustTrainer is NewTrainer for tests whose set-up must succeed.
func mustTrainer(t testing.TB, src *Source, cfg Config) *Trainer {
	t.Helper()
	tr, err := NewTrainer(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
