package corebus

import (
	"sync"
	"testing"
)

func TestLatestEmptyThenLatest(t *testing.T) {
	l := NewLatest[int]()
	var v int
	if l.Load(&v) {
		t.Fatal("Load on an empty Latest reported a value")
	}
	for i := 1; i <= 5; i++ {
		l.Store(&i)
	}
	if !l.Load(&v) || v != 5 {
		t.Fatalf("Load = %d, want 5", v)
	}
	// No new Store: the reader keeps seeing the last value.
	if !l.Load(&v) || v != 5 {
		t.Fatalf("second Load = %d, want 5", v)
	}
	six := 6
	l.Store(&six)
	if !l.Load(&v) || v != 6 {
		t.Fatalf("Load after Store(6) = %d, want 6", v)
	}
}

// A writer stores snapshots whose every field carries the same counter; the
// reader must never see a mix of two snapshots nor go backwards.
func TestLatestConcurrentWholeValues(t *testing.T) {
	const n = 200000
	l := NewLatest[Snapshot]()
	var wg sync.WaitGroup
	wg.Go(func() {
		var s Snapshot
		for i := 1; i <= n; i++ {
			s.Loop.Ticks = uint64(i)
			for j := range s.Robot.JointPos {
				s.Robot.JointPos[j] = float64(i)
			}
			l.Store(&s)
		}
	})
	var s Snapshot
	var last uint64
	for last < n {
		if !l.Load(&s) {
			continue
		}
		for _, q := range s.Robot.JointPos {
			if q != float64(s.Loop.Ticks) {
				t.Fatalf("torn snapshot: tick %d with joint %v", s.Loop.Ticks, q)
			}
		}
		if s.Loop.Ticks < last {
			t.Fatalf("went backwards: %d after %d", s.Loop.Ticks, last)
		}
		last = s.Loop.Ticks
	}
	wg.Wait()
}

func TestLatestAllocatesNothing(t *testing.T) {
	l := NewLatest[Snapshot]()
	var in, out Snapshot
	if n := testing.AllocsPerRun(1000, func() {
		l.Store(&in)
		l.Load(&out)
	}); n != 0 {
		t.Fatalf("Store+Load allocate %v times", n)
	}
}

func BenchmarkLatestStore(b *testing.B) {
	l := NewLatest[Snapshot]()
	var s Snapshot
	b.ReportAllocs()
	for b.Loop() {
		l.Store(&s)
	}
}
