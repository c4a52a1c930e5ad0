package skills_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// Merging puts the banks' slots side by side, points each latent at its own slot, keeps names
// unique, drops what an evaluation measured and keeps the shared encoder; every action a merged
// latent produces is the one its source bank produced, with the sources' policy head.
func TestMerge(t *testing.T) {
	for _, components := range []int{0, 3} {
		t.Run(fmt.Sprintf("components %d", components), func(t *testing.T) { testMerge(t, components) })
	}
}

func testMerge(t *testing.T, components int) {
	c := skillstest.Navigation(t)
	slots := func(actions ...[skills.NumJoints]float32) *skills.Bank {
		if components > 1 {
			return skillstest.MixtureSlots(t, c, components, actions...)
		}
		return skillstest.ConstantSlots(t, c, actions...)
	}
	var a0, a1, a2 [skills.NumJoints]float32
	a0[0], a1[0], a2[0] = 0.1, 0.2, 0.3
	first := slots(a0, a1)
	second := slots(a2)
	fre := skillstest.ConstantFRE(t, c, []float32{1, 0})
	first.FRE, second.FRE = fre, fre
	ret, yes := 4.0, true
	first.Latents[1].Info.OnlineReturn, first.Latents[1].Info.PassedFilter = &ret, &yes
	first.Latents[1].Info.GoalRate = map[string]float32{"obstacle": 1}
	first.Latents[1].Info.Tags = []string{"bc"}

	m, err := skills.Merge("test merge", []string{"first", "second"}, first, second)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Slots) != 3 || len(m.Latents) != 3 || m.FRE == nil || m.Producer != "test merge" || m.Components != components {
		t.Fatalf("merged %d slots, %d latents, FRE %v, producer %q, %d components", len(m.Slots), len(m.Latents), m.FRE != nil, m.Producer, m.Components)
	}
	wantNames := []string{"first/constant0", "constant1", "second/constant0"}
	for i, l := range m.Latents {
		if l.Info.Name != wantNames[i] {
			t.Errorf("latent %d named %q, want %q", i, l.Info.Name, wantNames[i])
		}
	}
	if l := m.Latents[1].Info; l.OnlineReturn != nil || l.PassedFilter != nil || l.GoalRate != nil || len(l.Tags) != 1 {
		t.Errorf("latent 1 keeps measurements %+v (want none, and its tag)", l)
	}
	obs := make([]float32, c.Layout.Dim())
	for i, want := range []float32{0.1, 0.2, 0.3} {
		l := m.Latents[i]
		if l.Info.Skill != i {
			t.Fatalf("latent %d points at slot %d", i, l.Info.Skill)
		}
		p, err := skills.NewPolicy(m.Slots[l.Info.Skill].Policy, len(obs), m.LatentDim, skills.NumJoints, m.Components)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetLatent(l.Z); err != nil {
			t.Fatal(err)
		}
		act := make([]float32, skills.NumJoints)
		if err := p.Act(obs, act); err != nil {
			t.Fatal(err)
		}
		if act[0] != want {
			t.Errorf("latent %d acts %v, want %v", i, act[0], want)
		}
	}
	// The sources are untouched.
	if first.Latents[1].Info.OnlineReturn == nil || first.Latents[0].Info.Name != "constant0" {
		t.Error("Merge changed a source bank")
	}
}

// Banks of different data, widths or encoders are refused with the reason.
func TestMergeRefuses(t *testing.T) {
	c := skillstest.Navigation(t)
	var a [skills.NumJoints]float32
	base := func() *skills.Bank { return skillstest.ConstantSlots(t, c, a) }
	otherData := base()
	otherData.Contract.Normaliser.Mean = slices.Clone(c.Normaliser.Mean) // the contracts share c's slices
	otherData.Contract.Normaliser.Mean[0] += 1
	loco := skillstest.ConstantSlots(t, skillstest.Locomotion(t), a)
	withFRE := base()
	withFRE.FRE = skillstest.ConstantFRE(t, c, []float32{1, 0})
	otherFRE := base()
	otherFRE.FRE = skillstest.ConstantFRE(t, c, []float32{0, 1})
	mixture := func(components int) *skills.Bank { return skillstest.MixtureSlots(t, c, components, a) }
	one := base()
	one.Components = 1
	for _, tc := range []struct {
		name   string
		banks  []*skills.Bank
		labels []string
		want   string
	}{
		{"one bank", []*skills.Bank{base()}, []string{"a"}, "want 2 or more"},
		{"labels", []*skills.Bank{base(), base()}, []string{"a"}, "1 labels for 2 banks"},
		{"normaliser", []*skills.Bank{base(), otherData}, []string{"a", "b"}, "different contracts"},
		{"layout", []*skills.Bank{base(), loco}, []string{"a", "b"}, "different contracts"},
		{"FRE on one", []*skills.Bank{base(), withFRE}, []string{"a", "b"}, "the other none"},
		{"FRE differs", []*skills.Bank{withFRE, otherFRE}, []string{"a", "b"}, "different FRE encoders"},
		{"mixture and single Gaussian", []*skills.Bank{base(), mixture(3)}, []string{"a", "b"}, "policy heads of a single Gaussian and a 3-component Gaussian mixture"},
		{"mixtures of different sizes", []*skills.Bank{mixture(3), mixture(2)}, []string{"a", "b"}, "policy heads of a 3-component Gaussian mixture and a 2-component Gaussian mixture"},
		{"components 0 and 1 are one head", []*skills.Bank{base(), one}, []string{"a", "a"}, "both named"}, // refused for the names alone
		{"same labels, same names", []*skills.Bank{base(), base()}, []string{"a", "a"}, "both named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.Merge("test", tc.labels, tc.banks...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(tc.want, "different") || strings.Contains(tc.want, "none") || strings.Contains(tc.want, "policy heads") {
				if !errors.Is(err, skills.ErrIncompatible) {
					t.Errorf("%v is not ErrIncompatible", err)
				}
			}
		})
	}
}

// KeepSlots keeps the named slots in the order named, with their latents pointing at them, and
// refuses an empty, out-of-range or repeated list.
func TestKeepSlots(t *testing.T) {
	c := skillstest.Navigation(t)
	var a0, a1, a2 [skills.NumJoints]float32
	a0[0], a1[0], a2[0] = 0.1, 0.2, 0.3
	b := skillstest.ConstantSlots(t, c, a0, a1, a2)
	kept, err := b.KeepSlots([]int{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Slots) != 2 || len(kept.Latents) != 2 || len(b.Slots) != 3 || len(b.Latents) != 3 {
		t.Fatalf("kept %d slots, %d latents; source %d, %d", len(kept.Slots), len(kept.Latents), len(b.Slots), len(b.Latents))
	}
	for i, want := range []struct {
		name  string
		skill int
	}{{"constant0", 1}, {"constant2", 0}} {
		if l := kept.Latents[i].Info; l.Name != want.name || l.Skill != want.skill {
			t.Errorf("latent %d: %q of slot %d, want %q of slot %d", i, l.Name, l.Skill, want.name, want.skill)
		}
	}
	last := func(s skills.Slot) float32 { return s.Policy.Layers[len(s.Policy.Layers)-1].B[0] }
	if last(kept.Slots[0]) != last(b.Slots[2]) || last(kept.Slots[1]) != last(b.Slots[0]) {
		t.Error("the kept slots are not the source's slots 2 and 0")
	}
	for _, tc := range []struct {
		slots []int
		want  string
	}{
		{nil, "keeping no slot"},
		{[]int{3}, "slot 3: the bank has slots 0-2"},
		{[]int{-1}, "slot -1"},
		{[]int{1, 1}, "slot 1 named twice"},
	} {
		if _, err := b.KeepSlots(tc.slots); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("KeepSlots(%v): %v, want %q", tc.slots, err, tc.want)
		}
	}
}
