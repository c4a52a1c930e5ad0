package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/runtime/corebus"
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
	}
}
