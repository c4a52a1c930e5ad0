package export

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/nn"
)

// TestBankRunsTheTrainedPolicies: a latent-conditioned slot and an
// unconditioned one in one bank, with a single Gaussian head and with a
// mixture; the bank's skills.Policy for each latent acts as the trainer's
// network with that latent does.
func TestBankRunsTheTrainedPolicies(t *testing.T) {
	for _, components := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d components", components), func(t *testing.T) { testBankRunsTheTrainedPolicies(t, components) })
	}
}

func testBankRunsTheTrainedPolicies(t *testing.T, components int) {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	obs, act := c.Layout.Dim(), skills.NumJoints
	head := skills.HeadOutputs(act, components)
	conditioned, err := nn.NewConditioned[float32](rng, []int{obs, 16, head}, 3, nn.ReLU, nn.Identity)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := nn.NewConditioned[float32](rng, []int{obs, 16, head}, 0, nn.ReLU, nn.Identity)
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
	if b.LatentDim != 3 || len(b.Slots) != 2 || len(b.Latents) != 3 || b.Latents[2].Info.Skill != 1 || max(1, b.Components) != components {
		t.Fatalf("bank: latent width %d, %d slots, %d components, latents %+v", b.LatentDim, len(b.Slots), b.Components, b.Latents)
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
		(&nn.SquashedGaussian[float32]{Net: net.Net, ActDim: act, Components: components}).Mode(&nn.Tape[float32]{}, x, 1, want)
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

// TestBankRefusesHeadsItCannotDeploy: slots whose heads differ in their
// mixture, or whose output is no head's, make no bank.
func TestBankRefusesHeadsItCannotDeploy(t *testing.T) {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	obs, act := c.Layout.Dim(), skills.NumJoints
	net := func(outputs int) *nn.Conditioned[float32] {
		n, err := nn.NewConditioned[float32](rng, []int{obs, 8, outputs}, 0, nn.ReLU, nn.Identity)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	psi := make([]float32, skills.NumJoints)
	for _, tc := range []struct {
		name    string
		outputs []int
	}{
		{"a single Gaussian and a mixture", []int{2 * act, skills.HeadOutputs(act, 3)}},
		{"mixtures of 2 and 3", []int{skills.HeadOutputs(act, 2), skills.HeadOutputs(act, 3)}},
		{"a head of 25 outputs", []int{25}},
	} {
		var slots []*nn.Conditioned[float32]
		for _, o := range tc.outputs {
			slots = append(slots, net(o))
		}
		if _, err := Bank(c, "test", slots, []Latent{{Slot: 0, Z: []float32{0}, Info: skills.LatentInfo{OfflinePsi: psi}}}); !errors.Is(err, ErrExport) {
			t.Errorf("%s: %v, want ErrExport", tc.name, err)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}
