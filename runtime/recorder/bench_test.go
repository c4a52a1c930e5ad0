package recorder

import (
	"os"
	"testing"

	"github.com/foxglove/mcap/go/mcap"
)

// policyTicks returns policyEvery ticks as the runtime sends them: the first a policy tick
// with observation, action and events, the others payloads only.
func policyTicks() []*Tick {
	gens := make([]tickGen, policyEvery)
	ticks := make([]*Tick, policyEvery)
	for i := range ticks {
		ticks[i] = gens[i].make(uint64(i * 5)) // tick 0 is a policy tick with events
	}
	return ticks
}

// controlSide is a Recorder without its writer goroutine, so that measurements see only what
// the control thread pays (the writer's own allocations would show up in the global counts).
func controlSide() *Recorder {
	return &Recorder{ring: newRing(1<<12, 256, 1024)}
}

// BenchmarkRecord measures the control side's Record: "queued" while the ring has room (the
// timer stops while a batch is discarded, as the writer would), "ring full" the drop path a
// stalled disk leads to.
func BenchmarkRecord(b *testing.B) {
	b.Run("queued", func(b *testing.B) {
		r := controlSide()
		ticks := policyTicks()
		batch := r.ring.capacity()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%batch == 0 {
				b.StopTimer()
				r.ring.tail.Store(r.ring.head.Load())
				b.StartTimer()
			}
			t := ticks[i%policyEvery]
			t.Index = uint64(i)
			if err := r.Record(t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ring full", func(b *testing.B) {
		r := controlSide()
		ticks := policyTicks()
		for r.Record(ticks[1]) == nil {
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := r.Record(ticks[i%policyEvery]); err != ErrRingFull {
				b.Fatal(err)
			}
		}
	})
}

func TestRecordDoesNotAllocate(t *testing.T) {
	r := controlSide()
	ticks := policyTicks()
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		t := ticks[i%policyEvery]
		t.Index = uint64(i)
		if err := r.Record(t); err != nil {
			panic(err)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("Record allocates %v times per call", allocs)
	}
}

// BenchmarkWriter measures the writer goroutine's side: ns per tick from the ring to a finished
// file (a policy tick every 20th), to compare against the 1 ms a tick has at 1 kHz.
func BenchmarkWriter(b *testing.B) {
	for _, compression := range []mcap.CompressionFormat{mcap.CompressionZSTD, mcap.CompressionLZ4, CompressionNone} {
		b.Run(string(compression), func(b *testing.B) {
			r := newTestRecorder(b, Options{RingTicks: b.N, Compression: compression, MaxFiles: 1})
			ticks := policyTicks()
			for i := 0; i < b.N; i++ {
				t := ticks[i%policyEvery]
				t.Index = uint64(i)
				if err := r.Record(t); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			err := r.Close() // drains everything now rather than at the next interval
			b.StopTimer()
			if err != nil || r.Stats().Written != uint64(b.N) {
				b.Fatalf("%v, stats %+v", err, r.Stats())
			}
			files, _ := Recordings(r.opts.Dir, "")
			fi, _ := os.Stat(files[0])
			b.ReportMetric(float64(fi.Size())/float64(b.N), "bytes/tick")
		})
	}
}
