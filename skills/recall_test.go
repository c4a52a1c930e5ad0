package skills

import (
	"errors"
	"testing"
)

func TestElementOffset(t *testing.T) {
	loco, nav := Locomotion48(), Navigation171()
	off := func(l Layout, field string) int {
		f, ok := l.Field(field)
		if !ok {
			t.Fatalf("%s has no %s", l.Name, field)
		}
		return f.Offset
	}
	for _, tc := range []struct {
		layout Layout
		name   string
		want   int // -1: refused
	}{
		{loco, "base_lin_vel.x", off(loco, FieldBaseLinVel)},
		{loco, "base_ang_vel.z", off(loco, FieldBaseAngVel) + 2},
		{loco, "projected_gravity.y", off(loco, FieldProjectedGravity) + 1},
		{loco, "joint_pos.FL_KFE", off(loco, FieldJointPos) + 2},
		{loco, "joint_vel.HR_KFE", off(loco, FieldJointVel) + 11},
		{loco, "previous_action[0]", off(loco, FieldPreviousAction)},
		{loco, "joint_pos[11]", off(loco, FieldJointPos) + 11},
		{nav, "height_map[120]", off(nav, FieldHeightMap) + 120},
		{nav, "remaining_time", off(nav, FieldRemainingTime)},
		{nav, "target[3]", off(nav, FieldTarget) + 3},
		{loco, "joint_pos[12]", -1},
		{loco, "joint_pos", -1},           // 12 elements: name one
		{loco, "joint_pos.x", -1},         // not a 3-vector
		{loco, "base_lin_vel.FL_HAA", -1}, // not a joint field
		{loco, "base_lin_vel.w", -1},
		{loco, "joint_pos[-1]", -1},
		{loco, "joint_pos[]", -1},
		{loco, "joint_pos[1", -1},
		{loco, "joint_pos[+1]", -1},
		{loco, "joint_pos[00001]", -1},
		{loco, "height_map[0]", -1}, // not in locomotion
		{loco, "base_height", -1},
		{loco, "", -1},
		{loco, ".x", -1},
		{loco, "[0]", -1},
	} {
		got, err := ElementOffset(tc.layout, tc.name)
		switch {
		case tc.want < 0 && !errors.Is(err, ErrUnknownElement):
			t.Errorf("%s %q: offset %d, error %v; want ErrUnknownElement", tc.layout.Name, tc.name, got, err)
		case tc.want >= 0 && (err != nil || got != tc.want):
			t.Errorf("%s %q: offset %d, error %v; want %d", tc.layout.Name, tc.name, got, err, tc.want)
		}
	}
}

// Resolving an operator's element names happens on the robot's control thread.
func TestElementOffsetDoesNotAllocate(t *testing.T) {
	l := Navigation171()
	allocs := testing.AllocsPerRun(100, func() {
		for _, name := range []string{"joint_pos.FL_KFE", "height_map[60]", "base_ang_vel.z", "nonsense[x]"} {
			_, _ = ElementOffset(l, name)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func FuzzElementOffset(f *testing.F) {
	for _, s := range []string{"joint_pos.FL_KFE", "height_map[120]", "base_lin_vel.x", "remaining_time", "x[", "[", ".", "a.b.c"} {
		f.Add(s)
	}
	l := Navigation171()
	f.Fuzz(func(t *testing.T, name string) {
		off, err := ElementOffset(l, name)
		if err != nil {
			if !errors.Is(err, ErrUnknownElement) {
				t.Fatalf("%q: %v", name, err)
			}
			return
		}
		if off < 0 || off >= l.Dim() {
			t.Fatalf("%q: offset %d outside the %d-element observation", name, off, l.Dim())
		}
	})
}

// A reward w * obs[e] on a feature element is (w * std) * phi[k] plus a constant.
func TestProjectorFeature(t *testing.T) {
	l := Navigation171()
	c, err := NewContract(l)
	if err != nil {
		t.Fatal(err)
	}
	c.Features.Stats.Std[5] = 2 // base_ang_vel.z, the sixth feature
	p, err := c.NewProjector()
	if err != nil {
		t.Fatal(err)
	}
	yaw, _ := ElementOffset(l, "base_ang_vel.z")
	if k, scale, ok := p.Feature(yaw); !ok || k != 5 || scale != 2 {
		t.Fatalf("base_ang_vel.z: feature %d scale %v ok %v, want 5, 2, true", k, scale, ok)
	}
	vx, _ := ElementOffset(l, "base_lin_vel.x")
	if k, scale, ok := p.Feature(vx); !ok || k != 0 || scale != 1 {
		t.Fatalf("base_lin_vel.x: feature %d scale %v ok %v", k, scale, ok)
	}
	q, _ := ElementOffset(l, "joint_pos.FL_KFE")
	if _, _, ok := p.Feature(q); ok {
		t.Fatal("joint_pos is not among navigation's features")
	}
}

func TestBest(t *testing.T) {
	ret := func(v float64) *float64 { return &v }
	pass := func(v bool) *bool { return &v }
	b := sampleBank(t, Locomotion48(), 2, 3, 4, 8)
	for i := range b.Latents {
		b.Latents[i].Info.OnlineReturn, b.Latents[i].Info.PassedFilter = nil, nil
	}
	// Unevaluated: slot 0's last latent.
	if s, err := b.Best(); err != nil || s.Index != 2 {
		t.Errorf("unevaluated bank: Best = latent %d, %v; want 2", s.Index, err)
	}
	// Evaluated: the highest return among the latents not filtered out.
	b.Latents[1].Info.OnlineReturn, b.Latents[1].Info.PassedFilter = ret(50), pass(true)
	b.Latents[3].Info.OnlineReturn, b.Latents[3].Info.PassedFilter = ret(90), pass(false)
	b.Latents[4].Info.OnlineReturn = ret(70) // measured without a filter
	b.Latents[5].Info.OnlineReturn, b.Latents[5].Info.PassedFilter = ret(70), pass(true)
	if s, err := b.Best(); err != nil || s.Index != 4 {
		t.Errorf("evaluated bank: Best = latent %d, %v; want 4 (70, first of the tie; 90 was filtered out)", s.Index, err)
	}
	// With goal rates (navigation): the most often at the goal over the bank's worlds, a world
	// not measured counting 0; the return only breaks ties.
	b.Latents[1].Info.GoalRate = map[string]float32{"obstacle": 0.75, "obstacle_fenced": 0.25}
	b.Latents[4].Info.GoalRate = map[string]float32{"obstacle": 0.25, "obstacle_fenced": 0.25}
	b.Latents[5].Info.GoalRate = map[string]float32{"obstacle": 0.75}
	if s, err := b.Best(); err != nil || s.Index != 1 {
		t.Errorf("navigation bank: Best = latent %d, %v; want 1 (mean goal rate 0.5 over 0.25, 0.375; return 50 below 70)", s.Index, err)
	}
	b.Latents[4].Info.GoalRate["obstacle"] = 0.75
	if s, err := b.Best(); err != nil || s.Index != 4 {
		t.Errorf("navigation bank, a tie at 0.5: Best = latent %d, %v; want 4 (return 70 over 50)", s.Index, err)
	}
	// Rates after a switch do not rank a start: counted, latent 1's would outweigh the tie.
	b.Latents[1].Info.GoalRate[AfterSwitchWorld("obstacle_fenced")] = 1
	if s, err := b.Best(); err != nil || s.Index != 4 {
		t.Errorf("navigation bank with a rate after a switch: Best = latent %d, %v; want 4 (the start rates tie at 0.5)", s.Index, err)
	}
	for i := range b.Latents {
		b.Latents[i].Info.OnlineReturn = nil
		b.Latents[i].Info.Skill = 1
	}
	if _, err := b.Best(); !errors.Is(err, ErrNoSkill) {
		t.Errorf("no slot-0 latent: %v", err)
	}
}
