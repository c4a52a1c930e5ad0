package behave

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// Navigation geometry (m).
const (
	// approach is how far before and after the box, along x, the route's waypoints beside (or
	// on the line over) the box lie: about the body's half length, so the body clears the box's
	// corners before turning.
	approach = 0.4
	// overApproach is the same for the route over the box: a straight run-up square to it.
	overApproach = 0.45
	// turnLead is how much nearer the start than its own route's first waypoint a navigator
	// that turns back takes the other route's: the turn then heads across towards its own
	// route's approach, not past it.
	turnLead = 0.1
	// passRadius is how close a waypoint must come before the next one is taken.
	passRadius = 0.15
	// arriveFraction of the goal radius is where the navigator stops walking to the goal and
	// starts keeping station on it.
	arriveFraction = 0.6
	// stationGain (1/s) and stationSpeed (m/s) turn the goal's offset in the base frame into the
	// small velocity command that keeps the base on the goal once it has arrived.
	stationGain  = 1.0
	stationSpeed = 0.15
	// maxSideSpeed (m/s) bounds the sideways walking while the heading turns to a waypoint.
	maxSideSpeed = 0.15
	// A navigator that turns onto the over route beside the box walks across the way (at most
	// mergeSpeed m/s) and back along it (mergeBack m/s) to the start of the run-up over it
	// (gain mergeGain 1/s), and takes the way over from there (passRadius) with its heading
	// within runUpAlign (rad) of it.
	mergeGain  = 2.0
	mergeSpeed = 0.25
	mergeBack  = 0.2
	runUpAlign = 0.15
)

// navigator steers a walker along waypoints past the box to the goal: straight at each
// waypoint, slowing while it turns, keeping station on the goal once it has arrived.
type navigator struct {
	*walker
	waypoints [][2]float64
	next      int
	goal      worlds.Goal
	arrived   bool
}

func newNavigator(spec Spec, am skills.ActionMap, l *worlds.Layout, rng *rand.Rand) (*navigator, error) {
	if l == nil || l.Goal == nil {
		return nil, fmt.Errorf("%w: navigate needs a layout with a goal", ErrSpec)
	}
	box := firstBox(l)
	if box == nil {
		return nil, fmt.Errorf("%w: navigate needs a layout with a box", ErrSpec)
	}
	w, err := newWalker(spec, am, l, rng)
	if err != nil {
		return nil, err
	}
	n := &navigator{walker: w, goal: *l.Goal}
	if spec.TurnFrom != "" {
		turn := approachTo(box, spec.TurnFrom, spec.Clearance)[0]
		if spec.TurnAt > 0 {
			turn[0] = box.Center[0] - spec.TurnAt
		} else {
			turn[0] -= turnLead
		}
		n.waypoints = [][2]float64{turn}
	}
	n.waypoints = append(n.waypoints, approachTo(box, spec.Route, spec.Clearance)...)
	n.waypoints = append(n.waypoints, [2]float64{n.goal.X, n.goal.Y})
	return n, nil
}

func (n *navigator) Act(s *State, a *[skills.NumJoints]float32) error {
	x, y, yaw := s.Pos[0], s.Pos[1], s.RPY[2]
	if !n.arrived && math.Hypot(n.goal.X-x, n.goal.Y-y) < arriveFraction*n.goal.Radius {
		n.arrived = true
	}
	if n.arrived {
		c, sn := math.Cos(yaw), math.Sin(yaw)
		dx, dy := n.goal.X-x, n.goal.Y-y
		clamp := func(v float64) float64 { return min(max(stationGain*v, -stationSpeed), stationSpeed) }
		return n.drive(s, clamp(c*dx+sn*dy), clamp(-sn*dx+c*dy), 0, a)
	}
	// Waypoints are ordered along +x: one is passed once it is near or behind the base. After a
	// turn back, the own route's approach (waypoint 1) only behind it on its own side of the box:
	// the turn heads across the way to it and drifts forward while it does, and taking the next
	// waypoint from the wrong side of the box would cut over it. After a turn onto the over
	// route, the run-up's start only from near it and square to the way over the box: walked
	// onto the centre line at a slant, the base climbed the box's face across it and fell (a
	// median 46 degrees off its axis).
	runUp := n.spec.TurnFrom != "" && n.spec.Route == RouteOver
	for n.next < len(n.waypoints)-1 {
		wp := n.waypoints[n.next]
		near := math.Hypot(wp[0]-x, wp[1]-y) <= passRadius
		var passed bool
		switch {
		case n.next == 1 && runUp:
			passed = near && math.Abs(offCourse(s, n.waypoints[2])) <= runUpAlign
		case n.next == 1 && n.spec.TurnFrom != "":
			passed = near || x >= wp[0] && math.Abs(wp[1]-y) <= passRadius
		default:
			passed = near || x >= wp[0]
		}
		if !passed {
			break
		}
		n.next++
	}
	if start := n.waypoints[1]; n.next == 1 && runUp && (x >= start[0] || math.Hypot(start[0]-x, start[1]-y) <= passRadius) {
		// Beside the box (it turned within sight of it) or at the run-up's start: step
		// sideways and back to the start, squaring up to the way over on the way.
		vx := min(max(mergeGain*(start[0]-x), -mergeBack), mergeBack)
		vy := min(max(mergeGain*(start[1]-y), -mergeSpeed), mergeSpeed)
		c, sn := math.Cos(yaw), math.Sin(yaw)
		return n.drive(s, c*vx+sn*vy, -sn*vx+c*vy, n.yawRate(offCourse(s, n.waypoints[2])), a)
	}
	wp := n.waypoints[n.next]
	bearing := math.Atan2(wp[1]-y, wp[0]-x) + n.wander()
	e := wrap(bearing - yaw)
	yawRate := n.yawRate(e)
	// Walk towards the waypoint in the base frame, sideways too while the heading catches up,
	// and slow down on the final approach so the goal is not overrun.
	speed := n.spec.Gait.VX
	if n.next == len(n.waypoints)-1 {
		speed = min(speed, 2*math.Hypot(wp[0]-x, wp[1]-y))
	}
	side := min(max(speed*math.Sin(e), -maxSideSpeed), maxSideSpeed)
	return n.drive(s, speed*max(0, math.Cos(e)), side, yawRate, a)
}

// offCourse is how far (rad) the heading of s is off the bearing to waypoint wp.
func offCourse(s *State, wp [2]float64) float64 {
	return wrap(math.Atan2(wp[1]-s.Pos[1], wp[0]-s.Pos[0]) - s.RPY[2])
}

// yawRate turns the heading towards a bearing e (rad) off it, within the gait's turning rate.
func (n *navigator) yawRate(e float64) float64 {
	maxRate := n.spec.Gait.YawRate
	return min(max(n.spec.HeadingGain*e, -maxRate), maxRate)
}

// approachTo returns the two waypoints of route past box: before and after it, beside it at
// clearance or on the line over it.
func approachTo(box *worlds.Box, route Route, clearance float64) [][2]float64 {
	cx, cy, hx, hy := box.Center[0], box.Center[1], box.Half[0], box.Half[1]
	switch route {
	case RouteLeft:
		return [][2]float64{{cx - hx - approach, cy + hy + clearance}, {cx + hx + approach, cy + hy + clearance}}
	case RouteRight:
		return [][2]float64{{cx - hx - approach, cy - hy - clearance}, {cx + hx + approach, cy - hy - clearance}}
	}
	return [][2]float64{{cx - hx - overApproach, cy}, {cx + hx + overApproach, cy}}
}

// RouteTaken tells which way past the box of l a base went, from one step of its path: when the
// step from (x0, y0) to (x1, y1) crosses the line across the box's centre (going forward, +x),
// the route is left or right by which side of the box the crossing lies, over when it lies
// within the box's width. ok is false for a step that does not cross, or without a box.
func RouteTaken(l *worlds.Layout, x0, y0, x1, y1 float64) (r Route, ok bool) {
	box := firstBox(l)
	if box == nil || !(x0 < box.Center[0] && x1 >= box.Center[0]) {
		return "", false
	}
	y := y0 + (y1-y0)*(box.Center[0]-x0)/(x1-x0)
	switch {
	case y > box.Center[1]+box.Half[1]:
		return RouteLeft, true
	case y < box.Center[1]-box.Half[1]:
		return RouteRight, true
	}
	return RouteOver, true
}

// firstBox is the first obstacle box of l (fences are not boxes), nil if none.
func firstBox(l *worlds.Layout) *worlds.Box {
	if l == nil {
		return nil
	}
	for i := range l.Boxes {
		if l.Boxes[i].Kind == worlds.KindBox {
			return &l.Boxes[i]
		}
	}
	return nil
}
