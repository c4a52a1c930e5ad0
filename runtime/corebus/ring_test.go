package corebus

import (
	"sync"
	"testing"
)

func TestRingCapacityRoundsUp(t *testing.T) {
	for _, tc := range []struct{ ask, want int }{{0, 2}, {1, 2}, {2, 2}, {3, 4}, {64, 64}, {65, 128}} {
		if got := NewRing[int](tc.ask).Cap(); got != tc.want {
			t.Errorf("NewRing(%d).Cap() = %d, want %d", tc.ask, got, tc.want)
		}
	}
}

func TestRingFIFOAndDropWhenFull(t *testing.T) {
	r := NewRing[int](4)
	for i := range 4 {
		if !r.Offer(i) {
			t.Fatalf("Offer(%d) refused with room left", i)
		}
	}
	if r.Offer(99) {
		t.Fatal("Offer into a full ring succeeded")
	}
	if r.Dropped() != 1 {
		t.Fatalf("Dropped = %d, want 1", r.Dropped())
	}
	var v int
	for i := range 4 {
		if !r.Poll(&v) || v != i {
			t.Fatalf("Poll = %d, want %d", v, i)
		}
	}
	if r.Poll(&v) {
		t.Fatal("Poll on an empty ring returned an item")
	}
	// Wrap around several times.
	for i := range 20 {
		r.Offer(i)
		if !r.Poll(&v) || v != i {
			t.Fatalf("after wrap Poll = %d, want %d", v, i)
		}
	}
}

// Several producers and consumers at once: every item arrives exactly once and
// each producer's items arrive in order.
func TestRingConcurrent(t *testing.T) {
	const producers, perProducer = 4, 20000
	type item struct{ producer, seq int }
	r := NewRing[item](64)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := 0; i < perProducer; {
				if r.Offer(item{p, i}) {
					i++
				}
			}
		})
	}
	got := make(chan []item, 2)
	done := make(chan struct{})
	for range 2 {
		go func() {
			var mine []item
			var it item
			for {
				if r.Poll(&it) {
					mine = append(mine, it)
					continue
				}
				select {
				case <-done:
					for r.Poll(&it) {
						mine = append(mine, it)
					}
					got <- mine
					return
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	seen := make([][]bool, producers)
	for p := range seen {
		seen[p] = make([]bool, perProducer)
	}
	for range 2 {
		last := make([]int, producers)
		for p := range last {
			last[p] = -1
		}
		for _, it := range <-got {
			if seen[it.producer][it.seq] {
				t.Fatalf("item %+v delivered twice", it)
			}
			seen[it.producer][it.seq] = true
			if it.seq <= last[it.producer] {
				t.Fatalf("producer %d out of order: %d after %d", it.producer, it.seq, last[it.producer])
			}
			last[it.producer] = it.seq
		}
	}
	for p := range seen {
		for i, ok := range seen[p] {
			if !ok {
				t.Fatalf("item {%d %d} lost", p, i)
			}
		}
	}
}

func TestRingAllocatesNothing(t *testing.T) {
	r := NewRing[Command](8)
	cmd := Command{Kind: KindMode, ID: "abc", Mode: ModeStand}
	var out Command
	if n := testing.AllocsPerRun(1000, func() {
		r.Offer(cmd)
		r.Poll(&out)
	}); n != 0 {
		t.Fatalf("Offer+Poll allocate %v times", n)
	}
}

func BenchmarkRingOfferPoll(b *testing.B) {
	r := NewRing[Event](64)
	ev := Event{Kind: EventModeChange, Mode: ModeRun, Reason: "operator"}
	var out Event
	b.ReportAllocs()
	for b.Loop() {
		r.Offer(ev)
		r.Poll(&out)
	}
}
