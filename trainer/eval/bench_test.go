package eval

import (
	"testing"
	"time"
)

// BenchmarkRolloutThroughput evaluates the fitted trot on 2 workers (4 rollouts of 5 s, stand-up
// included) and reports simulated policy steps and link ticks (1 ms each, power-on and stand-up
// included) per wall-clock second.
func BenchmarkRolloutThroughput(b *testing.B) {
	subjects := Latents(trotBank(b))
	cfg := shortConfig(b, 4, 5)
	cfg.Workers = 2
	steps, ticks := 0, 0
	var elapsed time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		res, err := Evaluate(b.Context(), cfg, subjects)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		steps += res.PolicySteps
		ticks += res.Ticks
	}
	b.ReportMetric(float64(steps)/elapsed.Seconds(), "policy_steps/s")
	b.ReportMetric(float64(ticks)/elapsed.Seconds(), "ticks/s")
}
