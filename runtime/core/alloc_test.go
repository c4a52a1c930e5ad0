package core_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// armedScenario is a running navigation core with switching, blending and recall armed: walls
// come and go on the routes, the robot makes no progress (a stall counts after 500 ms), and
// operator recalls (on the features and through the bank's FRE encoder) arrive every 700 ms.
// The bank's policy heads have the given mixture components (0: single Gaussians).
func armedScenario(t testing.TB, armed bool, components int) (s *scenario, tick func()) {
	s = newScenario(t, components)
	s.bank.FRE = skillstest.ConstantFRE(t, s.bank.Contract, []float32{1, 0}) // the real encoder runs
	s.cfg.Switching.StallAfter = 500 * time.Millisecond                      // the robot stands still: stalls too
	if !armed {
		s.cfg.Switching.Enabled, s.cfg.Blend = false, 0
	}
	s.start()
	for s.c.Phase().String() != "run" {
		s.step()
	}
	s.quiet = true
	recalls := []corebus.Command{
		{Kind: corebus.KindRecall, Recall: corebus.Recall{Reward: []corebus.RewardTerm{{Element: "base_ang_vel.z", Weight: 1}}}},
		// Offering a recall outside the features FRE-encodes it in the offering goroutine, which
		// allocates there; this one arrives encoded (what ConstantFRE gives), so that what is
		// counted is the control path.
		{Kind: corebus.KindRecall, Recall: corebus.Recall{Reward: []corebus.RewardTerm{{Element: "joint_pos.FL_HAA", Weight: 2}},
			Latent: []float32{1, 0}, Generation: 1}},
		{Kind: corebus.KindRecall, Recall: corebus.Recall{Reward: []corebus.RewardTerm{{Element: "base_lin_vel.x", Weight: 1}}}},
	}
	walls := []corebus.Routes{corebus.RouteLeft, 0, corebus.RouteRight, corebus.RouteOver, corebus.RouteLeft | corebus.RouteRight}
	n := 0
	return s, func() {
		n++
		if armed && n%700 == 0 {
			s.c.OfferCommand(recalls[n/700%len(recalls)])
		}
		if armed && n%1300 == 0 {
			s.wall(walls[n/1300%len(walls)])
		}
		s.step()
	}
}

// Switching, blending and recall add no allocation to the control path, whatever the policy
// head.
func TestArmedCoreDoesNotAllocate(t *testing.T) {
	for _, components := range []int{0, 3} {
		t.Run(fmt.Sprintf("components %d", components), func(t *testing.T) {
			s, tick := armedScenario(t, true, components)
			allocs := testing.AllocsPerRun(1, func() {
				for range 10000 {
					tick()
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations in 10 s of armed running", allocs)
			}
			if s.c.Fault() != "" || s.in.Now < 10*time.Second {
				t.Fatalf("fault %q at %v", s.c.Fault(), s.in.Now)
			}
			// The run did what it claims: obstacle switches, operator (recall) switches, recall replies.
			for trigger, n := range s.triggers {
				if n == 0 {
					t.Fatalf("switches by trigger %v: none by %v", s.triggers, corebus.SwitchTrigger(trigger))
				}
			}
			t.Logf("switches by trigger (operator, obstacle, no progress): %v", s.triggers)
		})
	}
}

// benchmarkNavigationTick times one link tick of a running navigation core (the kinematic
// robot's few conversions included), averaged over policy and other ticks.
func benchmarkNavigationTick(b *testing.B, armed bool) {
	_, tick := armedScenario(b, armed, 0)
	b.ReportAllocs()
	for b.Loop() {
		tick()
	}
}

// BenchmarkNavigationTickPlain runs without switching or blending.
func BenchmarkNavigationTickPlain(b *testing.B) { benchmarkNavigationTick(b, false) }

// BenchmarkNavigationTickArmed runs with switching and blending armed, walls coming and going,
// a stalled robot, and a recall every 700 ms.
func BenchmarkNavigationTickArmed(b *testing.B) { benchmarkNavigationTick(b, true) }
