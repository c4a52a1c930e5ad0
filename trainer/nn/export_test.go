package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

func TestExportedMLPMatchesForward(t *testing.T) {
	tests := []struct {
		name           string
		sizes          []int
		hidden, output Activation
	}{
		{"locomotion value", []int{48, 256, 256, 1}, ReLU, Identity},
		{"discriminator", []int{48, 256, 256, 1}, Tanh, Identity},
		{"odd widths", []int{7, 33, 5}, Tanh, Tanh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			m, err := NewMLP[float32](rng, tc.sizes, tc.hidden, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			const rows = 16
			x := randSlice[float32](rng, rows*m.InDim(), 1)
			want := m.Forward(&Tape[float32]{}, x, rows)
			ev, err := skills.NewEvaluator(ToSkills(m))
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for r := range rows {
				got, err := ev.Forward(x[r*m.InDim() : (r+1)*m.InDim()])
				if err != nil {
					t.Fatal(err)
				}
				for j, g := range got {
					worst = max(worst, math.Abs(float64(g-want[r*m.OutDim()+j])))
				}
			}
			t.Logf("max |skills - nn| = %.2e", worst)
			if worst > 1e-5 {
				t.Fatalf("exported network differs by %g", worst)
			}
		})
	}
}

func TestExportedPolicyActsLikeMode(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const obsDim, actDim, rows = 48, 12, 8
	p, err := NewSquashedGaussian[float32](rng, obsDim, []int{256, 256}, ReLU, actDim, 1)
	if err != nil {
		t.Fatal(err)
	}
	obs := randSlice[float32](rng, rows*obsDim, 1)
	want := make([]float32, rows*actDim)
	p.Mode(&Tape[float32]{}, obs, rows, want)
	sp, err := skills.NewPolicy(ToSkills(p.Net), obsDim, 0, actDim, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, actDim)
	for r := range rows {
		if err := sp.Act(obs[r*obsDim:(r+1)*obsDim], got); err != nil {
			t.Fatal(err)
		}
		for j, g := range got {
			if d := math.Abs(float64(g - want[r*actDim+j])); d > 1e-5 {
				t.Fatalf("row %d action %d: skills %v, trainer %v", r, j, g, want[r*actDim+j])
			}
		}
	}
}

func TestExportCopiesWeights(t *testing.T) {
	m, _ := NewMLP[float32](rand.New(rand.NewPCG(1, 1)), []int{2, 3}, ReLU, Identity)
	s := ToSkills(m)
	m.Params()[0] += 1
	if s.Layers[0].W[0] == m.Layers[0].W[0] {
		t.Fatal("exported weights alias the trainer's")
	}
}
