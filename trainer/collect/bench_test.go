package collect

import (
	"context"
	"testing"
	"time"

	"github.com/dualforce/dualforce/skills"
)

// paperLocomotionTransitions is the paper's locomotion set: 248,751 expert + 996,000 behaviour.
const paperLocomotionTransitions = 248_751 + 996_000

// BenchmarkCollectLocomotion collects the test-scale locomotion set (10,000 transitions, the
// paper's mix of modes) on two workers and reports the throughput and the time the paper-scale
// set would take at that rate.
func BenchmarkCollectLocomotion(b *testing.B) {
	p, err := NewPlan(TaskLocomotion, ScaleTest, 1)
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for _, m := range p.Modes {
		total += m.Transitions
	}
	start := time.Now()
	for b.Loop() {
		if _, err := Collect(context.Background(), p, Options{Workers: testWorkers}); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(total*b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "transitions/s")
	b.ReportMetric(paperLocomotionTransitions/rate/60, "min/paper-set")
}

// BenchmarkPolicyStep is one 20 ms policy step of one worker: 20 lockstep link ticks (command
// encode, board, MuJoCo, sensor decode, joint map, estimator) and the observation. It allocates
// nothing.
func BenchmarkPolicyStep(b *testing.B) {
	for _, name := range []string{TaskLocomotion, TaskNavigation} {
		b.Run(name, func(b *testing.B) {
			p, err := NewPlan(name, ScaleTest, 1)
			if err != nil {
				b.Fatal(err)
			}
			ep := p.episode(0, 0)
			e, err := newEnv(ep.layout, &p.Contract)
			if err != nil {
				b.Fatal(err)
			}
			defer e.close()
			if err := e.reset(e.robot.StartPose(), settleTicks); err != nil {
				b.Fatal(err)
			}
			tk := task{goal: p.Task.Goal(ep.layout), remaining: p.Task.EpisodeSeconds}
			var a, prev [skills.NumJoints]float32
			obs := make([]float32, p.Contract.Layout.Dim())
			b.ReportAllocs()
			for b.Loop() {
				if err := e.step(&a); err != nil {
					b.Fatal(err)
				}
				if err := e.observe(&tk, &prev, obs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
