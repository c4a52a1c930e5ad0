package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// The report keeps the best MaxReportedCandidates of any number weighed, best first: measured
// success before unmeasured, then higher success, then farther in SF space, then bank order.
func TestInsertRankedKeepsTheBest(t *testing.T) {
	nan := float32(math.NaN())
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := rng.IntN(20)
		all := make([]corebus.Candidate, n)
		var rep corebus.SwitchReport
		for i := range all {
			c := corebus.Candidate{Index: int32(i), Success: nan, Distance: nan}
			if rng.IntN(3) > 0 {
				c.Success = float32(rng.IntN(4)) / 4 // ties on purpose
			}
			if rng.IntN(3) > 0 {
				c.Distance = float32(rng.IntN(3))
			}
			all[i] = c
			insertRanked(&rep, c)
		}
		want := slices.Clone(all)
		slices.SortStableFunc(want, func(a, b corebus.Candidate) int {
			switch {
			case better(&a, &b):
				return -1
			case better(&b, &a):
				return 1
			}
			return 0
		})
		want = want[:min(n, corebus.MaxReportedCandidates)]
		if rep.Considered != n || !slices.EqualFunc(rep.Listed(), want, func(a, b corebus.Candidate) bool { return a.Index == b.Index }) {
			t.Fatalf("trial %d: considered %d of %d, listed %v, want %v", trial, rep.Considered, n, rep.Listed(), want)
		}
	}
}

func TestMatchingWorld(t *testing.T) {
	for blocked, want := range map[corebus.Routes]string{
		0:                                      WorldObstacle,
		corebus.RouteOver:                      WorldObstacle,
		corebus.RouteLeft:                      WorldFenceLeft,
		corebus.RouteLeft | corebus.RouteOver:  WorldFenceLeft,
		corebus.RouteRight:                     WorldFenceRight,
		corebus.RouteLeft | corebus.RouteRight: WorldFenced,
		corebus.RouteLeft | corebus.RouteRight | corebus.RouteOver: WorldFenced,
	} {
		if got := MatchingWorld(blocked); got != want {
			t.Errorf("blocked %v: %s, want %s", blocked.Names(), got, want)
		}
		if _, after := matchingWorlds(blocked); after != skills.AfterSwitchWorld(want) {
			t.Errorf("blocked %v: rates after a switch under %s, want %s", blocked.Names(), after, skills.AfterSwitchWorld(want))
		}
	}
}

// Walls are sorted into routes by where they stand against the line from the run's start to
// the goal: beyond the corridor they block that side's way round; within it they block the way
// over only when the line runs into them, and a wall that comes near the line on one side only
// (a fence along the box, with the box and the goal off the line on opposite sides) blocks
// that side.
func TestBlockedSortsWallsByTheLine(t *testing.T) {
	const (
		l, r, o = corebus.RouteLeft, corebus.RouteRight, corebus.RouteOver
	)
	along := func(lateral float64) func(x, y float64) bool { // a wall along the line
		return func(x, y float64) bool { return math.Abs(y-lateral) < 0.01 }
	}
	for _, tc := range []struct {
		name string
		base where // the base; the run started at the origin, the goal 3 m ahead
		wall func(x, y float64) bool
		want corebus.Routes
	}{
		{"nothing", where{}, func(x, y float64) bool { return false }, 0},
		{"along the line, 0.1 m left", where{}, along(0.1), l},
		{"along the line, 0.1 m right", where{}, along(-0.1), r},
		{"along the line, 0.3 m left", where{}, along(0.3), l},
		{"on the line", where{}, along(0), o},
		{"0.1 m either side", where{}, func(x, y float64) bool { return math.Abs(math.Abs(y)-0.1) < 0.01 }, o},
		{"across the way", where{}, func(x, y float64) bool { return math.Abs(x-0.4) < 0.01 }, l | r | o},
		{"across the way, left of the line only", where{}, func(x, y float64) bool { return math.Abs(x-0.4) < 0.01 && y > 0.05 }, l},
		// The base 0.2 m right of the line: a wall 0.1 m to its left stands 0.1 m right of the line.
		{"along, the base off the line", where{Y: -0.2}, along(0.1), r},
		// Turned 90 degrees left, a wall across the base's heading runs along the line, 0.3 m left.
		{"the base turned left", where{X: 1, Yaw: math.Pi / 2}, func(x, y float64) bool { return math.Abs(x-0.3) < 0.01 }, l},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSwitcher(DefaultSwitchConfig())
			s.setRoute(&where{GoalX: 3})
			var hm [skills.HeightMapPoints]float32
			for i := range hm {
				x, y := skills.HeightMapPoint(i)
				if hm[i] = -0.235; x > 0.05 && tc.wall(x, y) { // ahead of the ground under the base
					hm[i] += 0.6
				}
			}
			if got := s.blocked(&hm, &tc.base); got != tc.want {
				t.Errorf("blocked %v, want %v", got.Names(), tc.want.Names())
			}
		})
	}
}
