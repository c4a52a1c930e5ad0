package skills

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The manifest of a small deterministic bank, pinned byte for byte: any
// change to field names or encoding of format v2 shows up here.
func TestManifestGolden(t *testing.T) {
	c := testContract(t, Navigation171())
	const latentDim, hidden = 2, 3
	in := c.Layout.Dim() + latentDim
	ramp := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * float32(i%5-2)
		}
		return v
	}
	ret := 12.5
	b := &Bank{
		Producer: "golden", Contract: c, LatentDim: latentDim,
		Slots: []Slot{{Policy: MLP{Layers: []Dense{
			{In: in, Out: hidden, W: ramp(in*hidden, 0.01), B: ramp(hidden, 0.1), Act: ActTanh},
			{In: hidden, Out: 2 * NumJoints, W: ramp(hidden*2*NumJoints, 0.1), B: ramp(2*NumJoints, 0.01)},
		}}}},
		Latents: []Latent{{
			Info: LatentInfo{Skill: 0, Iteration: 7, Name: "fence-left", SigmoidMu: 0.25, Phi: 1.5,
				OfflinePsi: ramp(6, 0.5), OnlineReturn: &ret, OnlinePsi: ramp(6, 0.25), Tags: []string{"left"},
				GoalRate: map[string]float32{"obstacle": 0.9, "obstacle_fence_right": 0.8}},
			Z: []float32{1, -1},
		}},
		FRE: sampleFRE(rand.New(rand.NewPCG(7, 7)), c.Layout.Dim(), latentDim),
	}
	var buf bytes.Buffer
	if err := EncodeBank(&buf, b); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	back, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.Latents[0].Info.Name != "fence-left" {
		t.Fatal("golden bank does not read back")
	}
	for _, m := range unzipMembers(t, raw) {
		if m.name == ManifestMember {
			golden(t, "manifest.golden.json", m.data)
			return
		}
	}
	t.Fatal("no manifest member")
}
