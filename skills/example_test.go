package skills_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dualforce/dualforce/skills"
)

// tinyBank is a deterministic one-skill locomotion bank.
func tinyBank() *skills.Bank {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		log.Fatal(err)
	}
	const latentDim, hidden = 2, 4
	in := c.Layout.Dim() + latentDim
	ramp := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * float32(i%7-3)
		}
		return v
	}
	net := skills.MLP{Layers: []skills.Dense{
		{In: in, Out: hidden, W: ramp(in*hidden, 0.01), B: ramp(hidden, 0.1), Act: skills.ActReLU},
		{In: hidden, Out: 2 * skills.NumJoints, W: ramp(hidden*2*skills.NumJoints, 0.1), B: ramp(2*skills.NumJoints, 0.01), Act: skills.ActNone},
	}}
	passed := true
	return &skills.Bank{
		Producer:  "skills example",
		Contract:  c,
		LatentDim: latentDim,
		Slots:     []skills.Slot{{Policy: net}},
		Latents: []skills.Latent{{
			Info: skills.LatentInfo{
				Skill: 0, Iteration: 3, Name: "scripted-trot fit", SigmoidMu: 0.5, Phi: 2.5,
				OfflinePsi: ramp(12, 0.25), PassedFilter: &passed, Tags: []string{"trot", "high"},
			},
			Z: []float32{0.5, -1},
		}},
	}
}

// The runtime's path from a bank file to joint targets.
func Example() {
	dir, _ := os.MkdirTemp("", "bank")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bank.npz")
	if err := skills.WriteBank(path, tinyBank()); err != nil {
		log.Fatal(err)
	}

	// Start-up: read and verify the bank, check we can feed it, preallocate.
	bank, err := skills.ReadBank(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := bank.Contract.CheckFeedable(); err != nil {
		log.Fatal(err)
	}
	builder, err := bank.Contract.NewBuilder()
	if err != nil {
		log.Fatal(err)
	}
	policies, err := bank.NewPolicies()
	if err != nil {
		log.Fatal(err)
	}
	actions := bank.Contract.ActionMap()

	// Operator: "trot".
	skill := bank.ByTags("trot")[0]
	policy := policies[skill.Slot]
	if err := policy.SetLatent(skill.Z); err != nil {
		log.Fatal(err)
	}

	// Every policy step (no allocation from here on).
	in := skills.Inputs{ProjectedGravity: [3]float32{0, 0, -1}, JointPos: skills.StandingPose}
	obs := make([]float32, builder.Dim())
	a := make([]float32, skills.NumJoints)
	q := make([]float32, skills.NumJoints)
	if err := builder.Build(&in, obs); err != nil {
		log.Fatal(err)
	}
	if err := policy.Act(obs, a); err != nil {
		log.Fatal(err)
	}
	if err := actions.Targets(a, q); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (skill %d, iteration %d): hold each target for %d link ticks at Kp %.1f\n",
		skill.Info.Name, skill.Slot, skill.Info.Iteration, bank.Contract.LinkTicksPerPolicyStep(), bank.Contract.Kp)
	fmt.Printf("FL targets %.3f\n", q[:3]) // checked against numpy
	// Output:
	// scripted-trot fit (skill 0, iteration 3): hold each target for 20 link ticks at Kp 3.0
	// FL targets [-0.009 0.794 -1.603]
}
