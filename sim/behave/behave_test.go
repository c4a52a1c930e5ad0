package behave

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/gait"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

func actionMap(t *testing.T) skills.ActionMap {
	t.Helper()
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	c.ActionScale = 0.8
	return c.ActionMap()
}

// quat is the unit quaternion of Z-Y-X Euler angles.
func quat(roll, pitch, yaw float64) [4]float64 {
	cr, sr := math.Cos(roll/2), math.Sin(roll/2)
	cp, sp := math.Cos(pitch/2), math.Sin(pitch/2)
	cy, sy := math.Cos(yaw/2), math.Sin(yaw/2)
	return [4]float64{cr*cp*cy + sr*sp*sy, sr*cp*cy - cr*sp*sy, cr*sp*cy + sr*cp*sy, cr*cp*sy - sr*sp*cy}
}

func TestStateFrames(t *testing.T) {
	for _, rpy := range [][3]float64{{0, 0, 0}, {0.1, -0.2, 2.5}, {-0.4, 0.3, -1}} {
		got := RPY(quat(rpy[0], rpy[1], rpy[2]))
		for i := range 3 {
			if math.Abs(got[i]-rpy[i]) > 1e-12 {
				t.Fatalf("RPY(quat(%v)) = %v", rpy, got)
			}
		}
	}
	// Facing +y, a world velocity along +y is forward and one along +x is to the right.
	b := sim.BaseState{Quat: quat(0, 0, math.Pi/2), LinVel: [3]float64{1, 2, 0}}
	s := StateOf(&b, 3)
	if want := [3]float64{2, -1, 0}; math.Abs(s.LinVel[0]-want[0]) > 1e-12 || math.Abs(s.LinVel[1]-want[1]) > 1e-12 || s.Time != 3 {
		t.Fatalf("base-frame velocity %v, want %v", s.LinVel, want)
	}
	// Pitched nose-down by 0.3 rad, world -z has a forward component in the base frame.
	b = sim.BaseState{Quat: quat(0, 0.3, 0), LinVel: [3]float64{0, 0, -1}}
	if v := StateOf(&b, 0).LinVel; math.Abs(v[0]-math.Sin(0.3)) > 1e-12 || math.Abs(v[2]+math.Cos(0.3)) > 1e-12 {
		t.Fatalf("pitched base-frame velocity %v", v)
	}
}

func TestSpecValidate(t *testing.T) {
	walk := Spec{Kind: KindWalk, Gait: gait.DefaultParams(), HeadingGain: 1}
	nav := walk
	nav.Kind, nav.Route, nav.Gait.VX, nav.Gait.YawRate = KindNavigate, RouteOver, 0.4, 1
	tests := []struct {
		name string
		edit func(s *Spec)
		ok   bool
	}{
		{"walk", func(*Spec) {}, true},
		{"navigate", func(s *Spec) { *s = nav }, true},
		{"random", func(s *Spec) { *s = Spec{Kind: KindRandom, RandomStd: 0.5} }, true},
		{"unknown kind", func(s *Spec) { s.Kind = "dance" }, false},
		{"negative gain", func(s *Spec) { s.HeadingGain = -1 }, false},
		{"NaN noise", func(s *Spec) { s.ActionNoise = math.NaN() }, false},
		{"infinite drift", func(s *Spec) { s.HeadingDrift = math.Inf(1) }, false},
		{"gait too high", func(s *Spec) { s.Gait.Height = 0.5 }, false},
		{"navigate without route", func(s *Spec) { *s = nav; s.Route = "" }, false},
		{"navigate standing still", func(s *Spec) { *s = nav; s.Gait.VX = 0 }, false},
		{"navigate without turning", func(s *Spec) { *s = nav; s.Gait.YawRate = 0 }, false},
		{"random without spread", func(s *Spec) { *s = Spec{Kind: KindRandom} }, false},
		{"navigate turning back", func(s *Spec) { *s = nav; s.TurnFrom = RouteLeft }, true},
		{"turning back from its own route", func(s *Spec) { *s = nav; s.TurnFrom = RouteOver }, false},
		{"turning back from no route", func(s *Spec) { *s = nav; s.TurnFrom = "under" }, false},
		{"a walk turning back", func(s *Spec) { s.TurnFrom = RouteLeft }, false},
		{"turning back in sight of a fence", func(s *Spec) { *s = nav; s.TurnFrom, s.TurnAt = RouteLeft, 0.25 }, true},
		{"a turn place without a turn", func(s *Spec) { *s = nav; s.TurnAt = 0.25 }, false},
		{"a negative turn place", func(s *Spec) { *s = nav; s.TurnFrom, s.TurnAt = RouteLeft, -0.25 }, false},
		{"a NaN turn place", func(s *Spec) { *s = nav; s.TurnFrom, s.TurnAt = RouteLeft, math.NaN() }, false},
	}
	for _, tc := range tests {
		s := walk
		tc.edit(&s)
		err := s.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrSpec)) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
}

func obstacle(t *testing.T, name string) *worlds.Layout {
	t.Helper()
	s, err := worlds.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Layout(3)
}

func TestNew(t *testing.T) {
	am := actionMap(t)
	rng := rand.New(rand.NewPCG(1, 1))
	nav := Spec{Kind: KindNavigate, Gait: gait.DefaultParams(), Route: RouteLeft}
	nav.Gait.VX, nav.Gait.YawRate = 0.4, 1
	flat := obstacle(t, "flat")
	for _, l := range []*worlds.Layout{nil, flat, {Goal: &worlds.Goal{X: 1, Radius: 0.2}}} {
		if _, err := New(nav, am, l, rng); !errors.Is(err, ErrSpec) {
			t.Errorf("navigate in %+v: %v, want ErrSpec", l, err)
		}
	}
	bad := am
	bad.Scale = 0
	if _, err := New(Spec{Kind: KindRandom, RandomStd: 1}, bad, nil, rng); !errors.Is(err, ErrSpec) {
		t.Errorf("zero action scale accepted: %v", err)
	}
}

func TestRandomPolicy(t *testing.T) {
	c, err := New(Spec{Kind: KindRandom, RandomStd: 0.5}, actionMap(t), nil, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	const steps = 2000
	for range steps {
		var a [skills.NumJoints]float32
		if err := c.Act(&State{}, &a); err != nil {
			t.Fatal(err)
		}
		for _, v := range a {
			if v < -1 || v > 1 {
				t.Fatalf("action %v outside [-1,1]", v)
			}
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
	}
	n := float64(steps * skills.NumJoints)
	mean, std := sum/n, math.Sqrt(sq/n)
	// Clipping at +-1 (2 sigma) takes a little off the spread.
	if math.Abs(mean) > 0.02 || std < 0.45 || std > 0.5 {
		t.Fatalf("random actions: mean %.3f, std %.3f; want about 0 and 0.5", mean, std)
	}
}

// A noiseless walker's action maps back to its trot's joint targets, its height ramps from
// standing, and a heading error turns it back.
func TestWalker(t *testing.T) {
	am := actionMap(t)
	spec := Spec{Kind: KindWalk, Gait: gait.DefaultParams(), HeadingGain: 2, RampTime: 0.5}
	spec.Gait.VX, spec.Gait.Height = 0.3, 0.19
	w, err := newWalker(spec, am, nil, rand.New(rand.NewPCG(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if h := w.height(0); math.Abs(h-sim.StandingHeight()) > 1e-12 {
		t.Fatalf("height at t=0 %.4f, want standing %.4f", h, sim.StandingHeight())
	}
	if h := w.height(0.5); h != 0.19 {
		t.Fatalf("height after the ramp %.4f", h)
	}
	var a [skills.NumJoints]float32
	s := &State{Time: 1}
	if err := w.Act(s, &a); err != nil {
		t.Fatal(err)
	}
	// The walker latched heading 0 on its first step; now the base faces 0.5 rad left.
	s.RPY[2] = 0.5
	if err := w.Act(s, &a); err != nil {
		t.Fatal(err)
	}
	if w.trot.P.YawRate >= 0 {
		t.Fatalf("yaw rate %.3f with the base 0.5 rad left of its heading, want a right turn", w.trot.P.YawRate)
	}
	var q [skills.NumJoints]float32
	if err := am.Targets(a[:], q[:]); err != nil {
		t.Fatal(err)
	}
	// Replaying the gait from the same phase gives the same targets.
	tr, _ := gait.NewTrot(w.trot.P)
	tr.SetPhase(w.trot.Phase() - PolicyPeriod/w.trot.P.Period)
	want, err := tr.Targets(PolicyPeriod, gait.Base{})
	if err != nil {
		t.Fatal(err)
	}
	for j := range q {
		if math.Abs(float64(q[j])-want[j]) > 1e-5 {
			t.Fatalf("joint %d target %.5f, gait's %.5f", j, q[j], want[j])
		}
	}
}

func TestNavigatorRoutes(t *testing.T) {
	l := obstacle(t, "obstacle")
	box := l.Boxes[0]
	am := actionMap(t)
	for _, tc := range []struct {
		route Route
		side  float64 // sign of the first waypoint's y relative to the box centre
		turn  float64 // sign of the first yaw rate from the start heading
	}{{RouteLeft, 1, 1}, {RouteRight, -1, -1}, {RouteOver, 0, 0}} {
		spec := Spec{Kind: KindNavigate, Gait: gait.DefaultParams(), Route: tc.route, Clearance: 0.3, HeadingGain: 3}
		spec.Gait.VX, spec.Gait.YawRate = 0.5, 1.2
		c, err := New(spec, am, l, rand.New(rand.NewPCG(1, 4)))
		if err != nil {
			t.Fatal(err)
		}
		n := c.(*navigator)
		wp := n.waypoints
		if len(wp) != 3 || wp[2] != [2]float64{l.Goal.X, l.Goal.Y} {
			t.Fatalf("%s: waypoints %v", tc.route, wp)
		}
		wantY := box.Center[1] + tc.side*(box.Half[1]+0.3)
		if math.Abs(wp[0][1]-wantY) > 1e-12 || math.Abs(wp[1][1]-wantY) > 1e-12 || wp[0][0] >= box.Center[0]-box.Half[0] || wp[1][0] <= box.Center[0]+box.Half[0] {
			t.Fatalf("%s: waypoints %v around box %+v", tc.route, wp, box)
		}
		var a [skills.NumJoints]float32
		if err := c.Act(&State{}, &a); err != nil {
			t.Fatal(err)
		}
		if got := n.trot.P.YawRate; tc.turn != 0 && math.Signbit(got) != math.Signbit(tc.turn) {
			t.Errorf("%s: first yaw rate %.3f", tc.route, got)
		}
		// Standing on the goal it keeps station: no forward walking.
		at := &State{Pos: [3]float64{l.Goal.X, l.Goal.Y, 0.24}}
		if err := c.Act(at, &a); err != nil {
			t.Fatal(err)
		}
		if !n.arrived || math.Abs(n.trot.P.VX) > 1e-9 {
			t.Errorf("%s: at the goal arrived=%v, gait speed %.3f", tc.route, n.arrived, n.trot.P.VX)
		}
	}
}

// A navigator that turns back heads first for the other route's approach, a little nearer the
// start than its own, then for its own route's waypoints; passing its own approach along x on the
// wrong side of the box does not pass it.
func TestNavigatorTurnsBack(t *testing.T) {
	l := obstacle(t, "obstacle")
	box := l.Boxes[0]
	am := actionMap(t)
	for _, tc := range []struct {
		route, from Route
		at          float64
	}{
		{RouteLeft, RouteRight, 0}, {RouteRight, RouteLeft, 0}, {RouteOver, RouteLeft, 0}, {RouteOver, RouteRight, 0},
		{RouteLeft, RouteRight, 0.25}, {RouteOver, RouteLeft, 0.25},
	} {
		spec := Spec{Kind: KindNavigate, Gait: gait.DefaultParams(), Route: tc.route, Clearance: 0.3, HeadingGain: 3, TurnFrom: tc.from, TurnAt: tc.at}
		spec.Gait.VX, spec.Gait.YawRate = 0.5, 1.2
		plain := spec
		plain.TurnFrom, plain.TurnAt = "", 0
		c, err := New(spec, am, l, rand.New(rand.NewPCG(1, 4)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(plain, am, l, rand.New(rand.NewPCG(1, 4)))
		if err != nil {
			t.Fatal(err)
		}
		n, own := c.(*navigator), p.(*navigator).waypoints
		if !slices.Equal(n.waypoints[1:], own) {
			t.Fatalf("%s from %s: waypoints %v, want a turn and then %v", tc.route, tc.from, n.waypoints, own)
		}
		turn := n.waypoints[0]
		side := map[Route]float64{RouteLeft: 1, RouteRight: -1}[tc.from]
		if want := box.Center[1] + side*(box.Half[1]+0.3); math.Abs(turn[1]-want) > 1e-12 || (tc.at == 0 && turn[0] >= own[0][0]) {
			t.Fatalf("%s from %s: turn at %v, want y %.3f before %v", tc.route, tc.from, turn, want, own[0])
		}
		// In sight of a fence: tc.at before the line across the box's centre, where fences stand.
		if tc.at > 0 && math.Abs(turn[0]-(box.Center[0]-tc.at)) > 1e-12 {
			t.Fatalf("%s from %s at %v m: turn at x %.3f, want %.3f", tc.route, tc.from, tc.at, turn[0], box.Center[0]-tc.at)
		}
		var a [skills.NumJoints]float32
		// At the turn it heads for its own approach.
		if err := c.Act(&State{Pos: [3]float64{turn[0], turn[1], 0.24}}, &a); err != nil || n.next != 1 {
			t.Fatalf("%s from %s: at the turn next waypoint %d (%v), want 1", tc.route, tc.from, n.next, err)
		}
		if tc.route == RouteOver && tc.at > 0 {
			// Turned beside the box, past the run-up's start, already facing the way over: it
			// steps sideways towards the centre line and back, holding that heading, not on
			// towards the box's face.
			over := own[1]
			facing := State{Pos: [3]float64{turn[0], turn[1], 0.24}, RPY: [3]float64{0, 0, math.Atan2(over[1]-turn[1], over[0]-turn[0])}}
			if err := c.Act(&facing, &a); err != nil {
				t.Fatal(err)
			}
			p, yaw := n.trot.P, facing.RPY[2]
			vx, vy := math.Cos(yaw)*p.VX-math.Sin(yaw)*p.VY, math.Sin(yaw)*p.VX+math.Cos(yaw)*p.VY
			if vx > 0 || vy*side >= 0 || math.Abs(p.YawRate) > 0.1 {
				t.Fatalf("%s from %s at %v m: at the turn walking (%.2f, %.2f) m/s (world frame) turning %.2f rad/s, want back and across to the centre line, holding its heading",
					tc.route, tc.from, tc.at, vx, vy, p.YawRate)
			}
		}
		// Past its own approach along x but still on the other side: that waypoint is still ahead.
		if err := c.Act(&State{Pos: [3]float64{own[0][0] + 0.05, turn[1], 0.24}}, &a); err != nil || n.next != 1 {
			t.Fatalf("%s from %s: beyond its approach on the other side next waypoint %d (%v), want 1", tc.route, tc.from, n.next, err)
		}
		if tc.route == RouteOver {
			// At the run-up's start but facing across the way over (as it comes from the
			// side): it squares up before it leaves.
			facing := State{Pos: [3]float64{own[0][0] + 0.05, own[0][1], 0.24}, RPY: [3]float64{0, 0, -side * 1.4}}
			if err := c.Act(&facing, &a); err != nil || n.next != 1 {
				t.Fatalf("%s from %s: on the line facing across it next waypoint %d (%v), want 1", tc.route, tc.from, n.next, err)
			}
		}
		if err := c.Act(&State{Pos: [3]float64{own[0][0] + 0.05, own[0][1], 0.24}}, &a); err != nil || n.next != 2 {
			t.Fatalf("%s from %s: beyond its approach on its side next waypoint %d (%v), want 2", tc.route, tc.from, n.next, err)
		}
	}
}

func TestTerrainHeight(t *testing.T) {
	l := obstacle(t, "obstacle_fence_left")
	box, fence := l.Boxes[0], l.Boxes[1]
	top := box.Center[2] + box.Half[2]
	for _, tc := range []struct {
		x, y, want float64
	}{
		{box.Center[0], box.Center[1], top},
		{box.Center[0] + box.Half[0] - 1e-6, box.Center[1], top},
		{box.Center[0] + box.Half[0] + 1e-3, box.Center[1], 0},
		{fence.Center[0], fence.Center[1], 0}, // a wall, not a foothold
		{-3, 0, 0},
	} {
		if got := TerrainHeight(l, tc.x, tc.y); got != tc.want {
			t.Errorf("TerrainHeight(%.3f, %.3f) = %.3f, want %.3f", tc.x, tc.y, got, tc.want)
		}
	}
	if TerrainHeight(nil, 0, 0) != 0 {
		t.Error("no layout is flat ground")
	}
}

func TestRouteTaken(t *testing.T) {
	s, err := worlds.Builtin("obstacle")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Layout(0)
	box := l.Boxes[0]
	cx, cy, hy := box.Center[0], box.Center[1], box.Half[1]
	tests := []struct {
		name           string
		x0, y0, x1, y1 float64
		want           Route
		ok             bool
	}{
		{"left of the box", cx - 0.01, cy + hy + 0.1, cx + 0.01, cy + hy + 0.1, RouteLeft, true},
		{"right of the box", cx - 0.01, cy - hy - 0.1, cx + 0.01, cy - hy - 0.1, RouteRight, true},
		{"over it", cx - 0.01, cy, cx + 0.01, cy + 0.05, RouteOver, true},
		{"crossing on the line", cx - 0.02, cy + hy + 0.2, cx, cy + hy + 0.2, RouteLeft, true},
		{"before the box", cx - 0.3, cy, cx - 0.2, cy, "", false},
		{"going back", cx + 0.01, cy, cx - 0.01, cy, "", false},
	}
	for _, tc := range tests {
		got, ok := RouteTaken(l, tc.x0, tc.y0, tc.x1, tc.y1)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := RouteTaken(nil, 0, 0, 5, 0); ok {
		t.Error("a route without a box")
	}
}
