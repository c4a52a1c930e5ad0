package collect

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
)

// Every clean locomotion mode does what it claims in simulation, through the whole collection
// pipeline: forward speed within 15% of its command, yaw rate within 15% of its turning rate,
// low / middle / high base heights at least 3 cm apart, and the expert falls in under 2% of
// 50 episodes.
func TestLocomotionModes(t *testing.T) {
	const seconds = 3.0
	clean := []string{"low", "middle_slow", "high", "low_turn_left", "low_turn_right", "middle_turn_left",
		"middle_turn_right", "high_turn_left", "high_turn_right"}
	episodes := map[string]int{"expert": 50}
	for _, name := range clean {
		episodes[name] = 4
	}
	p := plan(t, TaskLocomotion, seconds, episodes)
	o := collect(t, p)
	// The first second holds the height ramp and the velocity loop settling.
	stats := statsByMode(o, 1)
	for _, name := range append([]string{"expert"}, clean...) {
		spec := modeByName(t, p, name).Spec.Gait
		s := stats[name]
		t.Logf("%-18s speed %.3f m/s (command %.2f)  yaw rate %+.3f rad/s (command %+.2f)  height %.3f m (command %.3f)",
			name, s.speed, spec.VX, s.yawRate, spec.YawRate, s.height, spec.Height)
		if math.Abs(s.speed-spec.VX) > 0.15*spec.VX {
			t.Errorf("%s: forward speed %.3f m/s, command %.3f", name, s.speed, spec.VX)
		}
		if want := spec.YawRate; math.Abs(s.yawRate-want) > max(0.15*math.Abs(want), 0.03) {
			t.Errorf("%s: yaw rate %.3f rad/s, command %.3f", name, s.yawRate, want)
		}
	}
	low, middle, high := stats["low"].height, stats["expert"].height, stats["high"].height
	if middle-low < 0.03 || high-middle < 0.03 {
		t.Errorf("base heights low %.3f, middle %.3f, high %.3f m: want at least 3 cm apart", low, middle, high)
	}
	for _, m := range o.Manifest.Modes {
		if m.Name == "expert" {
			t.Logf("expert: %d falls in %d episodes", m.Falls, m.Episodes)
			if m.Episodes != 50 || float64(m.Falls) >= 0.02*float64(m.Episodes) {
				t.Errorf("expert fell in %d of %d episodes, want under 2%%", m.Falls, m.Episodes)
			}
		}
	}
}

// The navigation expert reaches the goal in at least 90% of episodes on each route with no
// fences; with the left fence up, the left route fails.
func TestNavigationRoutes(t *testing.T) {
	const seconds, episodes = 12.0, 20
	p := plan(t, TaskNavigation, seconds, map[string]int{"left": episodes, "right": episodes, "over": episodes})
	o := collect(t, p)
	for _, m := range o.Manifest.Modes {
		if !m.Expert {
			continue
		}
		t.Logf("%-5s reached the goal in %d of %d episodes, %d falls, routes %v", m.Name, m.GoalReached, m.Episodes, m.Falls, m.Routes)
		// A fall ends an episode early and the plan's transitions go on in another, so a
		// mode that falls has more episodes than planned: the rates are of those it had.
		if m.Episodes < episodes || m.GoalReached*10 < 9*m.Episodes {
			t.Errorf("%s reached the goal in %d of %d episodes, want at least 90%%", m.Name, m.GoalReached, m.Episodes)
		}
		if m.Routes[m.Name]*10 < 9*m.Episodes {
			t.Errorf("%s went %v past the box in %d episodes, want its own route in at least 90%%", m.Name, m.Routes, m.Episodes)
		}
	}

	fenced := plan(t, TaskNavigation, seconds, map[string]int{"left": 5})
	fenced.Task.World = "obstacle_fence_left"
	of := collect(t, fenced)
	left := of.Manifest.Modes[0]
	t.Logf("left route with the left fence up: reached the goal in %d of %d episodes", left.GoalReached, left.Episodes)
	if left.Name != "left" || left.GoalReached != 0 {
		t.Errorf("left route behind the left fence reached the goal in %d of %d episodes, want none", left.GoalReached, left.Episodes)
	}
}

// The offline mix's worse behaviours are worse: the random policy falls, the sloppy walkers miss
// the command, and every mode's actions stay in range with few saturated.
func TestBehaviourMixIsMixed(t *testing.T) {
	p := plan(t, TaskLocomotion, 6, map[string]int{"expert": 1, "random": 8, "sloppy": 4, "noisy": 2, "drift": 2})
	o := collect(t, p)
	stats := statsByMode(o, 1)
	for _, m := range o.Manifest.Modes {
		if m.Transitions > 0 {
			t.Logf("%-7s %d episodes, %d falls, speed %.3f m/s, yaw rate %+.3f rad/s", m.Name, m.Episodes, m.Falls, stats[m.Name].speed, stats[m.Name].yawRate)
		}
		if m.Name == "random" && m.Falls == 0 {
			t.Errorf("the random policy never fell in %d episodes", m.Episodes)
		}
	}
	if s := stats["sloppy"].speed; math.Abs(s-locomotionSpeed) < 0.05 {
		t.Errorf("sloppy walkers track the command (%.3f m/s)", s)
	}
	saturated, scripted := 0, 0
	for i, a := range o.Data.Act {
		if p.Modes[o.Withheld.Mode[i/12]].Spec.Kind == behave.KindRandom {
			continue
		}
		scripted++
		if math.Abs(float64(a)) >= 1 {
			saturated++
		}
	}
	t.Logf("saturated action entries of the scripted walkers: %d of %d", saturated, scripted)
	if saturated*100 > scripted {
		t.Errorf("%d of %d scripted action entries saturate, want under 1%%", saturated, scripted)
	}
}

// TestExecutionNoiseRecordsTheBehavioursOwnActions: under DART noise the robot is commanded a
// perturbed action (the next observation's previous_action) while the dataset keeps the
// behaviour's own; without it the two are the same.
func TestExecutionNoiseRecordsTheBehavioursOwnActions(t *testing.T) {
	p := plan(t, TaskLocomotion, 2, map[string]int{"expert": 2, "low": 1})
	expert := modeByName(t, p, "expert")
	if expert.ExecutionNoise != expertExecutionNoise || modeByName(t, p, "low").ExecutionNoise != 0 {
		t.Fatalf("execution noise: expert %v, low %v", expert.ExecutionNoise, modeByName(t, p, "low").ExecutionNoise)
	}
	o := collect(t, p)
	prevField, ok := p.Contract.Layout.Field(skills.FieldPreviousAction)
	if !ok {
		t.Fatal("no previous_action field")
	}
	d := o.Data.ObsDim
	for _, ep := range episodes(o) {
		name := o.Manifest.Modes[ep.mode].Name
		var sq float64
		n := 0
		for i := ep.start; i < ep.end; i++ {
			for j := range skills.NumJoints {
				executed := float64(o.Data.NextObs[i*d+prevField.Offset+j])
				recorded := float64(o.Data.Act[i*skills.NumJoints+j])
				if executed > -1 && executed < 1 { // clipping hides the noise at the bounds
					sq += (executed - recorded) * (executed - recorded)
					n++
				}
			}
		}
		rms := math.Sqrt(sq / float64(n))
		switch {
		case name == "expert" && math.Abs(rms-expertExecutionNoise) > 0.2*expertExecutionNoise:
			t.Errorf("expert episode: executed actions differ from the recorded ones by %.4f RMS, want about %v", rms, expertExecutionNoise)
		case name != "expert" && rms != 0:
			t.Errorf("%s episode: executed actions differ from the recorded ones by %.4f RMS, want 0", name, rms)
		}
	}
}

// Other-side fences: every episode of a left or right route gets a fence on the other side, the
// over route's on either side; at share 0 the episodes are what they were; the open route still
// reaches the goal.
func TestOtherSideFence(t *testing.T) {
	p := plan(t, TaskNavigation, 12, map[string]int{"left": 3, "right": 1, "over": 1})
	before := firstEpisodes(p)
	p.OtherSideFence = 1
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	overSides := map[bool]int{}
	for m, mode := range p.Modes {
		for j := range firstEpisodeCount {
			ep, was := p.episode(m, j), before[[2]int{m, j}]
			f := ep.scenario.Fences
			if f == nil || f.Left == f.Right {
				t.Fatalf("%s episode %d: fences %+v, want one side", mode.Name, j, f)
			}
			switch ep.spec.Route {
			case behave.RouteLeft:
				if f.Left {
					t.Fatalf("%s episode %d: the fence blocks its own route", mode.Name, j)
				}
			case behave.RouteRight:
				if f.Right {
					t.Fatalf("%s episode %d: the fence blocks its own route", mode.Name, j)
				}
			default:
				overSides[f.Left]++
			}
			if ep.layout.Boxes[0] != was.layout.Boxes[0] || *ep.layout.Goal != *was.layout.Goal || ep.spec.Gait != was.spec.Gait {
				t.Fatalf("%s episode %d: the fence moved the box, the goal or the gait", mode.Name, j)
			}
			if len(ep.layout.Boxes) != 2 || ep.layout.Boxes[1].Kind != worlds.KindFence {
				t.Fatalf("%s episode %d: layout %+v, want the box and a fence", mode.Name, j, ep.layout.Boxes)
			}
		}
	}
	if overSides[true] == 0 || overSides[false] == 0 {
		t.Fatalf("routes without a side fenced %v (left: true), want both sides", overSides)
	}

	p.Modes = p.Modes[:1] // left only, fenced on the right: its route is open
	p.Modes[0].Transitions = 3 * p.steps()
	o := collect(t, p)
	if left := o.Manifest.Modes[0]; left.Name != "left" || left.GoalReached != left.Episodes {
		t.Errorf("left route with the right fence up reached the goal in %d of %d episodes, want all", left.GoalReached, left.Episodes)
	}
}

// Turning back: at share 1 every navigator episode turns back from the rule's side (the other
// side, or the fenced one for the over route), nothing else about the episode changes, each
// route still goes past the box its own way having headed for the fence first.
func TestTurnBack(t *testing.T) {
	p := plan(t, TaskNavigation, 12, map[string]int{"left": 1, "right": 1, "over": 2})
	p.OtherSideFence = 1
	before := firstEpisodes(p)
	p.TurnBack = 1
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	overFrom := map[behave.Route]int{}
	for m, mode := range p.Modes {
		for j := range firstEpisodeCount {
			ep, was := p.episode(m, j), before[[2]int{m, j}]
			f := ep.scenario.Fences
			want := map[behave.Route]behave.Route{behave.RouteLeft: behave.RouteRight, behave.RouteRight: behave.RouteLeft}[ep.spec.Route]
			if ep.spec.Route == behave.RouteOver {
				want = behave.RouteRight
				if f.Left {
					want = behave.RouteLeft
				}
				overFrom[want]++
			}
			if ep.spec.TurnFrom != want {
				t.Fatalf("%s episode %d (fences %+v): turns from %q, want %q", mode.Name, j, *f, ep.spec.TurnFrom, want)
			}
			ep.spec.TurnFrom = ""
			if !reflect.DeepEqual(ep.layout, was.layout) || ep.spec != was.spec || ep.seed != was.seed {
				t.Fatalf("%s episode %d: turning back changed the layout, the spec or the seed", mode.Name, j)
			}
		}
	}
	if overFrom[behave.RouteLeft] == 0 || overFrom[behave.RouteRight] == 0 {
		t.Fatalf("over episodes turn from %v, want both sides", overFrom)
	}

	p.Modes = p.Modes[:2] // left and right, each heading first for the fence on the other side
	o := collect(t, p)
	for _, md := range o.Manifest.Modes {
		if md.Episodes == 0 || md.Routes[md.Name] != md.Episodes || md.Falls != 0 {
			t.Errorf("%s turning back: routes %v, falls %d in %d episodes, want all its own way, none",
				md.Name, md.Routes, md.Falls, md.Episodes)
		}
	}
	// Each went well out to the other side first (its turn lies 0.75 m off the box's centre
	// line, which the world jitters by up to 0.2 m).
	for _, ep := range episodes(o) {
		side := map[string]float64{"left": -1, "right": 1}[o.Manifest.Modes[ep.mode].Name]
		if _, far := furthestOut(o, ep, side); far < 0.35 {
			t.Errorf("%s turning back: went at most %.2f m out to the other side, want 0.35", o.Manifest.Modes[ep.mode].Name, far)
		}
	}
}

// With FenceOnRoute the left and right routes' fenced episodes meet the fence on their own side
// and turn there to go over the box, in sight of the fence, with the over route's climbing gait;
// every other episode, and everything else of these, is as without. In MuJoCo the height map
// shows the fence near ahead before the turn (a cell above the base: the 0.05 m box never is
// one), and both go over the box.
func TestFenceOnRoute(t *testing.T) {
	p := plan(t, TaskNavigation, 12, map[string]int{"left": 1, "right": 1, "over": 2})
	p.OtherSideFence = 0.5
	before := firstEpisodes(p)
	p.FenceOnRoute = true
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	turned := 0
	for m, mode := range p.Modes {
		for j := range firstEpisodeCount {
			ep, was := p.episode(m, j), before[[2]int{m, j}]
			route, f := was.spec.Route, ep.scenario.Fences
			if f == nil || (route != behave.RouteLeft && route != behave.RouteRight) {
				if !reflect.DeepEqual(ep.layout, was.layout) || ep.spec != was.spec || ep.seed != was.seed {
					t.Fatalf("%s episode %d: an episode without a fence on its route changed", mode.Name, j)
				}
				continue
			}
			turned++
			if f.Left != (route == behave.RouteLeft) || f.Right == f.Left {
				t.Fatalf("%s episode %d: fences %+v, want one on its own side", mode.Name, j, *f)
			}
			want := was.spec
			want.Route, want.TurnFrom, want.TurnAt = behave.RouteOver, route, FenceSight
			want.Gait.StepHeight += navOverStep - navigate(route).Gait.StepHeight
			want.Gait.Climb = true
			if ep.spec != want || ep.seed != was.seed || !reflect.DeepEqual(ep.layout.Boxes[0], was.layout.Boxes[0]) {
				t.Fatalf("%s episode %d: spec %+v, want %+v, and the box and seed as without", mode.Name, j, ep.spec, want)
			}
		}
	}
	if turned == 0 || turned == 2*firstEpisodeCount {
		t.Fatalf("%d of %d left and right episodes meet a fence, want about half", turned, 2*firstEpisodeCount)
	}

	p.OtherSideFence = 1
	p.Modes = p.Modes[:2] // left and right, each meeting the fence on its own side
	o := collect(t, p)
	for _, md := range o.Manifest.Modes {
		if md.Episodes == 0 || md.Routes[string(behave.RouteOver)] != md.Episodes || md.Falls != 0 {
			t.Errorf("%s meeting a fence: routes %v, falls %d in %d episodes, want all over the box, none",
				md.Name, md.Routes, md.Falls, md.Episodes)
		}
	}
	hm, _ := p.Contract.Layout.Field(skills.FieldHeightMap)
	dim := o.Data.ObsDim
	for _, ep := range episodes(o) {
		name := o.Manifest.Modes[ep.mode].Name
		// The turn: the step furthest out to the fenced side.
		side := map[string]float64{"left": 1, "right": -1}[name]
		turn, out := furthestOut(o, ep, side)
		near := math.Inf(1)
		for i := ep.start; i <= turn; i++ {
			for k, v := range o.Data.Obs[i*dim+hm.Offset : i*dim+hm.Offset+hm.Dim] {
				if v > 0 {
					x, _ := skills.HeightMapPoint(k)
					near = min(near, x)
				}
			}
		}
		// Turning 0.65 m before the fence line instead, it is seen 0.4-0.5 m ahead at the most.
		if near > 0.3 {
			t.Errorf("%s meeting a fence: the fence in the height map %.2f m ahead at the nearest before the turn (%.2f m out, step %d), want 0.3",
				name, near, out, turn-ep.start)
		}
	}
}

// furthestOut is the row of episode ep whose base lies furthest out to one side (side +1: +y,
// the left; -1: the right), and how far out (m).
func furthestOut(o *datafile.Offline, ep span, side float64) (row int, out float64) {
	row, out = ep.start, math.Inf(-1)
	for i := ep.start; i < ep.end; i++ {
		if y := side * float64(o.Withheld.BasePosition[3*i+1]); y > out {
			row, out = i, y
		}
	}
	return row, out
}

// The navigation options are refused where they cannot be laid out: outside [0, 1], without a
// box to fence or turn back at, other-side fences in a world fenced already, fences on the route
// without fenced episodes or with turning back, and for locomotion.
func TestNavigationOptionsRefused(t *testing.T) {
	for _, bad := range []struct {
		name string
		task string
		edit func(*Plan)
	}{
		{"fence share above 1", TaskNavigation, func(p *Plan) { p.OtherSideFence = 1.5 }},
		{"NaN fence share", TaskNavigation, func(p *Plan) { p.OtherSideFence = math.NaN() }},
		{"fences in a world with fences", TaskNavigation, func(p *Plan) { p.OtherSideFence, p.Task.World = 0.5, "obstacle_fence_left" }},
		{"fences without a box", TaskNavigation, func(p *Plan) { p.OtherSideFence, p.Task.World = 0.5, "flat" }},
		{"locomotion with fences", TaskLocomotion, func(p *Plan) { p.OtherSideFence = 0.5 }},
		{"turn-back share above 1", TaskNavigation, func(p *Plan) { p.TurnBack = 1.5 }},
		{"negative turn-back share", TaskNavigation, func(p *Plan) { p.TurnBack = -0.1 }},
		{"NaN turn-back share", TaskNavigation, func(p *Plan) { p.TurnBack = math.NaN() }},
		{"turning back without a box", TaskNavigation, func(p *Plan) { p.TurnBack, p.Task.World = 0.5, "flat" }},
		{"locomotion turning back", TaskLocomotion, func(p *Plan) { p.TurnBack = 0.5 }},
		{"fences on the route without fences", TaskNavigation, func(p *Plan) { p.FenceOnRoute = true }},
		{"fences on the route turning back", TaskNavigation, func(p *Plan) { p.OtherSideFence, p.TurnBack, p.FenceOnRoute = 0.5, 0.5, true }},
	} {
		q := plan(t, TaskNavigation, 12, map[string]int{"left": 1})
		if bad.task == TaskLocomotion {
			q = plan(t, TaskLocomotion, 1, map[string]int{"expert": 1})
		}
		bad.edit(q)
		if err := q.validate(); !errors.Is(err, ErrPlan) {
			t.Errorf("%s: %v, want ErrPlan", bad.name, err)
		}
	}
}

// firstEpisodeCount is how many episodes of each mode firstEpisodes lays out.
const firstEpisodeCount = 20

// firstEpisodes lays out the first episodes of every mode of p, by mode and index.
func firstEpisodes(p *Plan) map[[2]int]*episode {
	out := make(map[[2]int]*episode)
	for m := range p.Modes {
		for j := range firstEpisodeCount {
			out[[2]int{m, j}] = p.episode(m, j)
		}
	}
	return out
}
