package skills

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// testContract is a valid contract for l (navigation gets a 20 s episode).
func testContract(t testing.TB, l Layout) Contract {
	t.Helper()
	c, err := NewContract(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Field(FieldRemainingTime); ok {
		c.EpisodeSeconds = 20
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGainCeilings(t *testing.T) {
	// masterboard.md: "joint Kp tops out at about 5.16 Nm/rad, Kd at about 0.62 Nm*s/rad".
	if math.Abs(MaxKp-5.16) > 0.01 || math.Abs(MaxKd-0.62) > 0.005 {
		t.Fatalf("MaxKp %v, MaxKd %v", MaxKp, MaxKd)
	}
}

func TestContractValidate(t *testing.T) {
	for _, l := range Layouts() {
		testContract(t, l)
	}
	nav, _ := NewContract(Navigation171())
	if err := nav.Validate(); err == nil || !strings.Contains(err.Error(), "episode length") {
		t.Errorf("navigation without episode length: %v", err)
	}
	tests := []struct {
		name   string
		layout Layout
		mutate func(*Contract)
		want   string
	}{
		{"kp over the ceiling", Locomotion48(), func(c *Contract) { c.Kp = 5.16 }, "kp"},
		{"kd over the ceiling", Locomotion48(), func(c *Contract) { c.Kd = 0.62 }, "kd"},
		{"negative kp", Locomotion48(), func(c *Contract) { c.Kp = -1 }, "kp"},
		{"NaN kd", Locomotion48(), func(c *Contract) { c.Kd = math.NaN() }, "kd"},
		{"rates", Locomotion48(), func(c *Contract) { c.PolicyHz = 0 }, "rates"},
		{"rate ratio", Locomotion48(), func(c *Contract) { c.PolicyHz = 30 }, "multiple"},
		{"normaliser size", Locomotion48(), func(c *Contract) { c.Normaliser.Mean = c.Normaliser.Mean[1:] }, "normaliser"},
		{"normaliser epsilon", Locomotion48(), func(c *Contract) { c.Normaliser.Epsilon = 0 }, "epsilon"},
		{"negative std", Locomotion48(), func(c *Contract) { c.Normaliser.Std[5] = -1 }, "std"},
		{"NaN mean", Locomotion48(), func(c *Contract) { c.Normaliser.Mean[5] = float32(math.NaN()) }, "mean"},
		{"action scale", Locomotion48(), func(c *Contract) { c.ActionScale = 0 }, "action scale"},
		{"joint limit", Locomotion48(), func(c *Contract) { c.JointUpper[0] = 1 }, "hardware"},
		{"feature field", Locomotion48(), func(c *Contract) { c.Features.Fields = []string{"target"} }, "feature field"},
		{"feature stats", Locomotion48(), func(c *Contract) { c.Features.Stats.Std = nil }, "feature stats"},
		{"height map on locomotion", Locomotion48(), func(c *Contract) { hm := DefaultHeightMap(); c.HeightMap = &hm }, "height-map"},
		{"no height map", Navigation171(), func(c *Contract) { c.HeightMap = nil }, "height-map"},
		{"height map size", Navigation171(), func(c *Contract) { c.HeightMap.Rows = 10 }, "does not fill"},
		{"height map extent", Navigation171(), func(c *Contract) { c.HeightMap.Extent = 0.6 }, "centred"},
		{"episode on locomotion", Locomotion48(), func(c *Contract) { c.EpisodeSeconds = 10 }, "episode length"},
		{"layout", Locomotion48(), func(c *Contract) { c.Layout.Fields[0].Offset = 1 }, "contiguous"},
	}
	for _, tt := range tests {
		c := testContract(t, tt.layout)
		tt.mutate(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidContract) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want ErrInvalidContract mentioning %q", tt.name, err, tt.want)
		}
	}
	c := testContract(t, Locomotion48())
	c.Kp, c.Kd, c.ActionScale = 9, 9, -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kp") || !strings.Contains(err.Error(), "kd") || !strings.Contains(err.Error(), "action scale") {
		t.Errorf("Validate should report every problem: %v", err)
	}
}

func TestContractJSON(t *testing.T) {
	for _, l := range Layouts() {
		c := testContract(t, l)
		c.Normaliser.Mean[0] = 0.1
		c.DefaultPose[3] = 0.3
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Contract
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, back) {
			t.Errorf("%s: JSON round trip changed the contract:\n%+v\n%+v", l.Name, c, back)
		}
	}
	for _, bad := range []string{`[1,2,3]`, `[1,2,3,4,5,6,7,8,9,10,11,12,13]`, `"x"`} {
		var v JointVector
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("JointVector accepted %s", bad)
		}
	}
}

func TestContractFeedable(t *testing.T) {
	c := testContract(t, Navigation171())
	if err := c.CheckFeedable(); err != nil {
		t.Fatal(err)
	}
	c.HeightMap.Spacing, c.HeightMap.Extent = 0.05, 0.25
	if err := c.Validate(); err != nil {
		t.Fatalf("a finer grid is a valid contract: %v", err)
	}
	if err := c.CheckFeedable(); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("runtime accepted a grid it does not sample: %v", err)
	}
}
