package eval

import (
	"math"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/trainer/collect"
)

func TestDescriptorMean(t *testing.T) {
	var d descriptorMean
	if got := d.mean(); got != (Descriptors{}) {
		t.Fatalf("no states: %+v", got)
	}
	// A trot at 0.3 m/s drifting left and turning right, bobbing between 0.18 and 0.20 m.
	for k := range 4 {
		s := behave.State{LinVel: [3]float64{0.3, 0.02 * float64(k), 0.5}, AngVel: [3]float64{1, 1, -0.1}}
		d.add(&s, 0.18+0.02*float64(k%2))
	}
	got, want := d.mean(), Descriptors{Height: 0.19, ForwardVel: 0.3, LateralVel: 0.03, YawRate: -0.1}
	for _, c := range [][2]float64{{got.Height, want.Height}, {got.ForwardVel, want.ForwardVel}, {got.LateralVel, want.LateralVel}, {got.YawRate, want.YawRate}} {
		if math.Abs(c[0]-c[1]) > 1e-12 {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

func TestHeightClass(t *testing.T) {
	for _, tc := range []struct {
		h    float64
		want string
	}{
		{0.0, TagLow}, {0.19, TagLow}, {0.2149, TagLow}, {0.216, TagMiddle}, {0.24, TagMiddle},
		{0.2599, TagMiddle}, {0.261, TagHigh}, {0.28, TagHigh}, {0.4, TagHigh},
	} {
		if got := HeightClass(tc.h); got != tc.want {
			t.Errorf("HeightClass(%v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func TestMeasuredTags(t *testing.T) {
	loco, err := TaskConfig(collect.TaskLocomotion)
	if err != nil {
		t.Fatal(err)
	}
	nav, err := TaskConfig(collect.TaskNavigation)
	if err != nil {
		t.Fatal(err)
	}
	high := &Summary{Descriptors: Descriptors{Height: 0.28}, Rollouts: make([]Rollout, 3)}
	left := &Summary{Descriptors: Descriptors{Height: 0.28}, Rollouts: []Rollout{{GoalStep: 9, Route: behave.RouteLeft}, {GoalStep: -1}}}
	for _, tc := range []struct {
		name  string
		task  collect.Task
		world string
		s     *Summary
		want  []string
	}{
		{"locomotion: height class", loco.Task, "flat", high, []string{TagHigh}},
		{"locomotion: no rollouts", loco.Task, "flat", &Summary{}, nil},
		{"navigation: route in the task's world", nav.Task, "obstacle", left, []string{TagLeft}},
		{"navigation: no route in a fenced world", nav.Task, "obstacle_fence_right", left, nil},
		{"navigation: no height class", nav.Task, "obstacle", high, nil},
	} {
		if got := MeasuredTags(tc.task, tc.world, tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tag := range []string{TagLow, TagMiddle, TagHigh, TagLeft, TagRight, TagOver} {
		if !measuredTag(tag) {
			t.Errorf("%q is not a measured tag", tag)
		}
	}
	if measuredTag("bc") {
		t.Error(`"bc" is a measured tag`)
	}
}

func TestRouteTag(t *testing.T) {
	reached := func(r behave.Route) Rollout { return Rollout{GoalStep: 40, Route: r} }
	missed := func(r behave.Route) Rollout { return Rollout{GoalStep: -1, Route: r} }
	l, r, o := behave.RouteLeft, behave.RouteRight, behave.RouteOver
	for _, tc := range []struct {
		name string
		runs []Rollout
		want string
	}{
		{"no rollouts", nil, ""},
		{"none past the box", []Rollout{missed(""), missed("")}, ""},
		{"past the box, none at the goal", []Rollout{missed(l), missed(l), missed(l)}, ""},
		{"one rollout over", []Rollout{reached(o), missed("")}, TagOver},
		{"all left", []Rollout{reached(l), reached(l), reached(l)}, TagLeft},
		{"three of four right", []Rollout{reached(r), reached(l), reached(r), reached(r)}, TagRight},
		{"misses do not count", []Rollout{reached(l), missed(r), reached(l), missed(r), missed(r)}, TagLeft},
		{"at the goal without passing the box does not count", []Rollout{reached(""), reached(""), reached(o)}, TagOver},
		{"a 2-2 split is no majority", []Rollout{reached(l), reached(r), reached(l), reached(r)}, ""},
		{"2-1-1 is no majority", []Rollout{reached(l), reached(r), reached(l), reached(o)}, ""},
		{"one each", []Rollout{reached(l), reached(r), reached(o)}, ""},
	} {
		if got := RouteTag(tc.runs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
