package metrics

import (
	"testing"
	"time"
)

// controlTick is what the control thread does to the metrics in one tick, with a policy step
// every 20th.
func controlTick(m *Metrics, i int) {
	m.ObserveLoopPeriod(time.Millisecond + time.Duration(i%7)*time.Microsecond)
	m.ObserveLinkRoundTrip(200 * time.Microsecond)
	m.AddSensorPacketsLost(0)
	m.AddCommandPacketsLost(uint64(i % 2))
	if i%20 == 0 {
		m.ObserveInference(40 * time.Microsecond)
		m.SetMode(i / 20 % 4)
		m.SetSkill(i / 20 % 9)
	}
	if i%1000 == 0 {
		m.IncOverruns()
		m.IncFault(i % 3)
	}
}

func BenchmarkControlTick(b *testing.B) {
	m, err := New(testOptions)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		controlTick(m, i)
	}
}

func BenchmarkObserveLoopPeriod(b *testing.B) {
	m, err := New(testOptions)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveLoopPeriod(time.Millisecond)
	}
}

func TestControlPathDoesNotAllocate(t *testing.T) {
	m, err := New(testOptions)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if allocs := testing.AllocsPerRun(2000, func() { controlTick(m, i); i++ }); allocs != 0 {
		t.Fatalf("a control tick allocates %v times", allocs)
	}
}
