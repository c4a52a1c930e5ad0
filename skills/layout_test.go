package skills

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file; if the change is intended, run go test -update\ngot:\n%s", name, got)
	}
}

func TestLayoutsGolden(t *testing.T) {
	js, err := json.MarshalIndent(Layouts(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "layouts.golden.json", append(js, '\n'))
}

// The slices of solo12.md, transcribed independently of layout.go.
func TestContractLayouts(t *testing.T) {
	type slice struct {
		name       string
		start, end int
	}
	tests := []struct {
		layout Layout
		dim    int
		want   []slice
	}{
		{Locomotion48(), 48, []slice{
			{"base_lin_vel", 0, 3}, {"base_ang_vel", 3, 6}, {"projected_gravity", 6, 9}, {"command", 9, 12},
			{"joint_pos", 12, 24}, {"joint_vel", 24, 36}, {"previous_action", 36, 48},
		}},
		{Navigation171(), 171, []slice{
			{"base_lin_vel", 0, 3}, {"base_ang_vel", 3, 6}, {"projected_gravity", 6, 9},
			{"joint_pos", 9, 21}, {"joint_vel", 21, 33}, {"previous_action", 33, 45},
			{"target", 45, 49}, {"height_map", 49, 170}, {"remaining_time", 170, 171},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.layout.Name, func(t *testing.T) {
			if err := tt.layout.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tt.layout.Dim(); got != tt.dim {
				t.Errorf("Dim = %d, want %d", got, tt.dim)
			}
			if len(tt.layout.Fields) != len(tt.want) {
				t.Fatalf("%d fields, want %d", len(tt.layout.Fields), len(tt.want))
			}
			for i, w := range tt.want {
				f := tt.layout.Fields[i]
				if f.Name != w.name || f.Offset != w.start || f.Offset+f.Dim != w.end {
					t.Errorf("field %d = %s[%d:%d], want %s[%d:%d]", i, f.Name, f.Offset, f.Offset+f.Dim, w.name, w.start, w.end)
				}
				got, ok := tt.layout.Field(w.name)
				if !ok || got != f {
					t.Errorf("Field(%q) = %+v, %v", w.name, got, ok)
				}
			}
			if _, ok := tt.layout.Field("nope"); ok {
				t.Error("Field found a field that does not exist")
			}
			byName, err := LayoutByName(tt.layout.Name)
			if err != nil || CheckFeedable(byName) != nil {
				t.Errorf("LayoutByName(%q): %v", tt.layout.Name, err)
			}
		})
	}
	if _, err := LayoutByName("locomotion49"); !errors.Is(err, ErrUnknownLayout) {
		t.Errorf("LayoutByName(unknown) = %v, want ErrUnknownLayout", err)
	}
}

func TestLayoutsAreCopies(t *testing.T) {
	l := Locomotion48()
	l.Fields[0].Name = "mutated"
	if Locomotion48().Fields[0].Name != FieldBaseLinVel {
		t.Fatal("mutating a returned layout changed the contract")
	}
}

func TestLayoutValidate(t *testing.T) {
	mut := func(f func(*Layout)) Layout {
		l := Locomotion48()
		f(&l)
		return l
	}
	tests := map[string]Layout{
		"no name":     mut(func(l *Layout) { l.Name = "" }),
		"no fields":   {Name: "x"},
		"gap":         mut(func(l *Layout) { l.Fields[1].Offset++ }),
		"zero dim":    mut(func(l *Layout) { l.Fields[6].Dim = 0 }),
		"repeat":      mut(func(l *Layout) { l.Fields[1].Name = l.Fields[0].Name }),
		"unnamed":     mut(func(l *Layout) { l.Fields[2].Name = "" }),
		"overlapping": mut(func(l *Layout) { l.Fields[0].Dim = 4 }),
	}
	for name, l := range tests {
		if err := l.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, l)
		}
	}
}

func TestCheckFeedable(t *testing.T) {
	mut := func(base Layout, f func(*Layout)) Layout {
		f(&base)
		return base
	}
	tests := []struct {
		name string
		got  Layout
		want error
	}{
		{"locomotion", Locomotion48(), nil},
		{"navigation", Navigation171(), nil},
		{"notes are documentation", mut(Locomotion48(), func(l *Layout) { l.Fields[0].Note = "reworded" }), nil},
		{"unknown name", mut(Locomotion48(), func(l *Layout) { l.Name = "locomotion50" }), ErrUnknownLayout},
		{"renamed field", mut(Locomotion48(), func(l *Layout) { l.Fields[3].Name = "cmd" }), ErrLayoutMismatch},
		{"swapped fields", mut(Navigation171(), func(l *Layout) {
			l.Fields[0].Name, l.Fields[1].Name = l.Fields[1].Name, l.Fields[0].Name
		}), ErrLayoutMismatch},
		{"unit", mut(Locomotion48(), func(l *Layout) { l.Fields[0].Unit = "km/h" }), ErrLayoutMismatch},
		{"missing field", mut(Navigation171(), func(l *Layout) { l.Fields = l.Fields[:8] }), ErrLayoutMismatch},
	}
	for _, tt := range tests {
		err := CheckFeedable(tt.got)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: CheckFeedable = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := CheckFeedable(Navigation171(), Locomotion48()); !errors.Is(err, ErrUnknownLayout) {
		t.Errorf("runtime feeding only locomotion accepted navigation: %v", err)
	}
}

func TestHeightMapPoint(t *testing.T) {
	tests := []struct {
		i    int
		x, y float64
	}{
		{0, -0.5, -0.5},    // rear right
		{10, -0.5, 0.5},    // rear left
		{11, -0.4, -0.5},   // second row: one step forward
		{60, 0, 0},         // under the base
		{110, 0.5, -0.5},   // front right
		{120, 0.5, 0.5},    // front left
		{5*11 + 7, 0, 0.2}, // row 5 (x 0), column 7 (y +0.2)
	}
	for _, tt := range tests {
		x, y := HeightMapPoint(tt.i)
		if math.Abs(x-tt.x) > 1e-12 || math.Abs(y-tt.y) > 1e-12 {
			t.Errorf("HeightMapPoint(%d) = (%v, %v), want (%v, %v)", tt.i, x, y, tt.x, tt.y)
		}
	}
	if HeightMapPoints != Navigation171().Fields[7].Dim {
		t.Error("height map size disagrees with the layout")
	}
}

func TestEncodeTarget(t *testing.T) {
	tests := []struct {
		name                     string
		dx, dy, baseYaw, goalYaw float64
		want                     [4]float32
	}{
		{"ahead", 2, 0, 0, 0, [4]float32{2, 0, 0, 1}},
		{"left", 0, 1, 0, 0, [4]float32{0, 1, 0, 1}},
		{"facing +y, goal at +y is ahead", 0, 3, math.Pi / 2, math.Pi / 2, [4]float32{3, 0, 0, 1}},
		{"facing +y, goal at +x is right", 1, 0, math.Pi / 2, math.Pi / 2, [4]float32{0, -1, 0, 1}},
		{"turn left 90", 0, 0, 0, math.Pi / 2, [4]float32{0, 0, 1, 0}},
		{"turn around", 0, 0, 0.3, 0.3 + math.Pi, [4]float32{0, 0, 0, -1}},
		{"wraps", 0, 0, math.Pi - 0.1, -math.Pi + 0.1, [4]float32{0, 0, float32(math.Sin(0.2)), float32(math.Cos(0.2))}},
	}
	for _, tt := range tests {
		got := EncodeTarget(tt.dx, tt.dy, tt.baseYaw, tt.goalYaw)
		for i := range got {
			if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
				t.Errorf("%s: EncodeTarget = %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestDefaultFeatureFields(t *testing.T) {
	loco, _ := DefaultFeatureFields(LayoutLocomotion48)
	nav, _ := DefaultFeatureFields(LayoutNavigation171)
	if Features(Features{Fields: loco}).Dim(Locomotion48()) != 12 || (Features{Fields: nav}).Dim(Navigation171()) != 6 {
		t.Errorf("feature dims: locomotion %v, navigation %v", loco, nav)
	}
	if _, err := DefaultFeatureFields("x"); !errors.Is(err, ErrUnknownLayout) {
		t.Error(err)
	}
}
