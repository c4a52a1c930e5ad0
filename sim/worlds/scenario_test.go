package worlds

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestBuiltinsParse(t *testing.T) {
	names := BuiltinNames()
	want := []string{"flat", "obstacle", "obstacle_fence_left", "obstacle_fence_right", "obstacle_fenced"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("BuiltinNames = %v, want %v", names, want)
	}
	for _, name := range names {
		s, err := Builtin(name)
		if err != nil {
			t.Fatalf("Builtin(%s): %v", name, err)
		}
		if s.Name != name {
			t.Errorf("%s: name field %q", name, s.Name)
		}
	}
	if _, err := Builtin("../flat"); err == nil {
		t.Fatal("Builtin(../flat) succeeded")
	}
	if _, err := Builtin("mars"); err == nil || !strings.Contains(err.Error(), "obstacle_fenced") {
		t.Fatalf("Builtin(mars) = %v, want the list of worlds", err)
	}
}

func TestDefaultsAndFences(t *testing.T) {
	s, err := Parse([]byte("name: t\nbox: {x: 1}\nfences: {left: true, right: true}\ngoal: {x: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Friction != DefaultFriction || s.Box.Height != DefaultBoxHeight || s.Goal.Radius != DefaultGoalRadius || s.Fences.Height != DefaultFenceHeight {
		t.Fatalf("defaults not applied: %+v %+v %+v %+v", s, *s.Box, *s.Goal, *s.Fences)
	}
	l := s.Layout(1)
	if len(l.Boxes) != 3 {
		t.Fatalf("boxes = %+v", l.Boxes)
	}
	box, left, right := l.Boxes[0], l.Boxes[1], l.Boxes[2]
	if box.Kind != KindBox || left.Kind != KindFence || right.Kind != KindFence {
		t.Fatalf("kinds %v %v %v", box.Kind, left.Kind, right.Kind)
	}
	// The fences continue the box sideways without a gap and stand 0.6 m tall.
	const eps = 1e-12
	if math.Abs((left.Center[1]-left.Half[1])-(box.Center[1]+box.Half[1])) > eps ||
		math.Abs((right.Center[1]+right.Half[1])-(box.Center[1]-box.Half[1])) > eps {
		t.Fatalf("fences do not meet the box edges: %+v %+v %+v", box, left, right)
	}
	if left.Center[2]+left.Half[2] != 0.6 || box.Center[2]+box.Half[2] != DefaultBoxHeight {
		t.Fatalf("heights: fence top %g, box top %g", left.Center[2]+left.Half[2], box.Center[2]+box.Half[2])
	}
}

func TestLayoutSeeding(t *testing.T) {
	s, err := Builtin("obstacle")
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := s.Layout(7), s.Layout(7), s.Layout(8)
	if a.Boxes[0] != b.Boxes[0] || *a.Goal != *b.Goal {
		t.Fatal("same seed gave different layouts")
	}
	if a.Boxes[0] == c.Boxes[0] || *a.Goal == *c.Goal {
		t.Fatal("different seeds gave the same layout")
	}
	for seed := range uint64(200) {
		l := s.Layout(seed)
		bx := l.Boxes[0].Center
		if math.Abs(bx[0]-s.Box.X) > s.Jitter.BoxX || math.Abs(bx[1]-s.Box.Y) > s.Jitter.BoxY {
			t.Fatalf("seed %d: box at %v outside jitter", seed, bx)
		}
		if math.Abs(l.Goal.X-s.Goal.X) > s.Jitter.GoalX || math.Abs(l.Goal.Y-s.Goal.Y) > s.Jitter.GoalY {
			t.Fatalf("seed %d: goal at %+v outside jitter", seed, *l.Goal)
		}
	}
}

// A start region: every layout's start lies within the jitter and they differ; the start's
// draws come last, so the box and the goal are where the world without them puts them.
func TestStartJitter(t *testing.T) {
	fixed, err := Builtin("obstacle")
	if err != nil {
		t.Fatal(err)
	}
	wide := *fixed
	j := *fixed.Jitter
	j.StartX, j.StartY, j.StartYaw = 0.05, 0.3, 0.5
	wide.Jitter = &j
	if err := wide.Validate(); err != nil {
		t.Fatal(err)
	}
	starts, headings := map[Pose2D]bool{}, map[float64]bool{}
	for seed := range uint64(100) {
		l, f := wide.Layout(seed), fixed.Layout(seed)
		if l.Boxes[0] != f.Boxes[0] || *l.Goal != *f.Goal {
			t.Fatalf("seed %d: start jitter moved the box or the goal", seed)
		}
		if f.Start != fixed.Start {
			t.Fatalf("seed %d: a world without start jitter starts at %+v", seed, f.Start)
		}
		s := l.Start
		if math.Abs(s.X-fixed.Start.X) > j.StartX || math.Abs(s.Y-fixed.Start.Y) > j.StartY || math.Abs(s.Yaw-fixed.Start.Yaw) > j.StartYaw {
			t.Fatalf("seed %d: start %+v outside the jitter %+v", seed, s, j)
		}
		starts[s], headings[s.Yaw] = true, true
	}
	if len(starts) < 100 || len(headings) < 100 {
		t.Fatalf("100 seeds gave %d starts, %d headings", len(starts), len(headings))
	}
}

// A start region that reaches the box: every start is clear of the box as drawn by the world's
// start clearance (the default, or jitter.start_clear), and starts come nearer to it than the
// worst case of the box's jitter would allow, up to that clearance.
func TestStartRegionReachingTheBox(t *testing.T) {
	for _, tc := range []struct {
		yaml  string
		clear float64
	}{
		{"", defaultStartClear},
		{", start_clear: 0.22", 0.22},
	} {
		s, err := Parse([]byte("box: {x: 1}\njitter: {box_x: 0.15, start_x: 0.7, start_y: 0.6" + tc.yaml + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		worstCase := s.Box.X - s.Box.Length/2 - s.Jitter.BoxX - tc.clear
		beyond, nearest := 0, math.Inf(1)
		for seed := range uint64(400) {
			l := s.Layout(seed)
			box := l.Boxes[0]
			gap := math.Max(math.Abs(l.Start.X-box.Center[0])-box.Half[0], math.Abs(l.Start.Y-box.Center[1])-box.Half[1])
			if gap <= tc.clear {
				t.Fatalf("clearance %g: seed %d: start %+v is %.3f m from the box at %v", tc.clear, seed, l.Start, gap, box.Center)
			}
			nearest = math.Min(nearest, gap)
			if l.Start.X > worstCase && math.Abs(l.Start.Y) < box.Half[1] {
				beyond++
			}
		}
		if beyond < 15 || nearest > tc.clear+0.02 {
			t.Fatalf("clearance %g: %d of 400 starts in front of the box beyond the worst-case line x=%.2f, nearest %.3f m: the region does not reach the box", tc.clear, beyond, worstCase, nearest)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, yaml, wantSub string
	}{
		{"empty", "", "empty document"},
		{"comment only", "# nothing\n", "empty document"},
		{"unknown field", "name: x\nwidth: 3\n", "field width not found"},
		{"unknown nested field", "box: {x: 1, colour: red}\n", "field colour not found"},
		{"typo in fences", "box: {x: 1}\nfences: {lef: true}\n", "field lef not found"},
		{"wrong type", "box: {x: one}\n", "cannot unmarshal"},
		{"list for mapping", "start: [1, 2]\n", "cannot unmarshal"},
		{"not yaml", "{{{{", "did not find"},
		{"tab indentation", "box:\n\tx: 1\n", "cannot start any token"},
		{"two documents", "name: a\n---\nname: b\n", "more than one"},
		{"negative height", "box: {x: 1, height: -0.05}\n", "box.height"},
		{"nan position", "box: {x: .nan}\n", "box.x"},
		{"infinite start", "start: {x: .inf}\n", "start.x"},
		{"far away", "goal: {x: 1e9}\n", "goal.x"},
		{"zero-friction stays default, negative is an error", "friction: -1\n", "friction"},
		{"huge friction", "friction: 50\n", "friction"},
		{"fences without box", "fences: {left: true}\n", "need a box"},
		{"fences with no side", "box: {x: 1}\nfences: {height: 0.6}\n", "neither left nor right"},
		{"negative jitter", "box: {x: 1}\njitter: {box_x: -0.1}\n", "jitter.box_x"},
		{"jitter without box", "jitter: {box_x: 0.1}\n", "there is no box"},
		{"jitter without goal", "jitter: {goal_y: 0.1}\n", "there is no goal"},
		{"start on the box", "box: {x: 0.2}\n", "start"},
		{"jitter can reach start", "box: {x: 0.8}\njitter: {box_x: 0.4}\n", "start"},
		{"negative start jitter", "jitter: {start_y: -0.1}\n", "jitter.start_y"},
		{"start heading jitter past a half turn", "jitter: {start_yaw: 4}\n", "jitter.start_yaw"},
		{"start clearance inside the feet", "jitter: {start_clear: 0.1}\n", "jitter.start_clear"},
		{"negative start clearance", "jitter: {start_clear: -0.3}\n", "jitter.start_clear"},
		{"nan start clearance", "jitter: {start_clear: .nan}\n", "jitter.start_clear"},
		{"start clearance puts the start near the box", "box: {x: 0.6}\njitter: {start_clear: 0.5}\n", "within 0.5 m"},
		{"goal on the box", "box: {x: 1}\ngoal: {x: 1.1}\n", "goal"},
		{"oversized", "name: " + strings.Repeat("x", maxScenarioB) + "\n", "larger than"},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n", "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", s)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantSub) {
				t.Fatalf("error %q does not mention %q", err, tc.wantSub)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := builtinFS.ReadFile(name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("box: {x: 1, height: -1}\n"))
	f.Add([]byte("fences: {left: true}\n"))
	f.Add([]byte("box: {x: 1}\njitter: {start_x: 0.7, start_clear: 0.22}\n"))
	f.Add([]byte("a: &a [x]\nb: [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed scenario fails Validate: %v", err)
		}
		l := s.Layout(3)
		finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
		for _, b := range l.Boxes {
			for k := range 3 {
				if !finite(b.Center[k]) || !(b.Half[k] > 0) {
					t.Fatalf("bad box %+v", b)
				}
			}
		}
		if g := l.Goal; g != nil && (!finite(g.X) || !finite(g.Y)) {
			t.Fatalf("bad goal %+v", *g)
		}
	})
}
