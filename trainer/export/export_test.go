package export

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/nn"
)

// TestBankRunsTheTrainedPolicies: a latent-conditioned slot and an
// unconditioned one in one bank; the bank's skills.Policy for each latent
// acts as the trainer's network with that latent does.
func TestBankRunsTheTrainedPolicies(t *testing.T) {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	obs, act := c.Layout.Dim(), skills.NumJoints
	conditioned, err := nn.NewConditioned[float32](rng, []int{obs, 16, 2 * act}, 3, nn.ReLU, nn.Identity)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := nn.NewConditioned[float32](rng, []int{obs, 16, 2 * act}, 0, nn.ReLU, nn.Identity)
	if err != nil {
		t.Fatal(err)
	}
	psi := make([]float32, skills.NumJoints)
	latents := []Latent{
		{Slot: 0, Z: []float32{1, -2, 0.5}, Info: skills.LatentInfo{Name: "a", OfflinePsi: psi}},
		{Slot: 0, Z: []float32{0, 0, 3}, Info: skills.LatentInfo{Name: "b", OfflinePsi: psi}},
		{Slot: 1, Z: []float32{0}, Info: skills.LatentInfo{Name: "c", OfflinePsi: psi}},
	}
	b, err := Bank(c, "test", []*nn.Conditioned[float32]{conditioned, plain}, latents)
	if err != nil {
		t.Fatal(err)
	}
	if b.LatentDim != 3 || len(b.Slots) != 2 || len(b.Latents) != 3 || b.Latents[2].Info.Skill != 1 {
		t.Fatalf("bank: latent width %d, %d slots, latents %+v", b.LatentDim, len(b.Slots), b.Latents)
	}
	policies, err := b.NewPolicies()
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, obs)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i, l := range latents {
		net := []*nn.Conditioned[float32]{conditioned, plain}[l.Slot]
		if err := net.SetLatent(l.Z[:net.Latent]); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, act)
		(&nn.SquashedGaussian[float32]{Net: net.Net, ActDim: act}).Mode(&nn.Tape[float32]{}, x, 1, want)
		p := policies[b.Latents[i].Info.Skill]
		if err := p.SetLatent(b.Latents[i].Z); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, act)
		if err := p.Act(x, got); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if math.Abs(float64(got[j]-want[j])) > 1e-5 {
				t.Fatalf("latent %q: bank %v, trainer %v", l.Info.Name, got, want)
			}
		}
	}
	if _, err := Bank(c, "test", []*nn.Conditioned[float32]{plain}, []Latent{{Slot: 1}}); !errors.Is(err, ErrExport) {
		t.Errorf("a latent of a missing slot: %v", err)
	}
}
