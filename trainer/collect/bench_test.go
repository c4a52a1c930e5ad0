package collect

import (
	"context"
	"testing"
	"time"
)

// paperTransitions are the paper's sets: locomotion 248,751 expert + 996,000 behaviour,
// navigation 654,501 + 749,501.
var paperTransitions = map[string]int{TaskLocomotion: 248_751 + 996_000, TaskNavigation: 654_501 + 749_501}

// BenchmarkCollect collects each task's test-scale set (the paper's mix of modes) on two
// workers and reports the throughput and the time the paper-scale set would take at that rate.
func BenchmarkCollect(b *testing.B) {
	for _, task := range []string{TaskLocomotion, TaskNavigation} {
		b.Run(task, func(b *testing.B) {
			p, err := NewPlan(task, ScaleTest, 1)
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
			b.ReportMetric(float64(paperTransitions[task])/rate/60, "min/paper-set")
		})
	}
}
