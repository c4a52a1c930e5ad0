package perception_test

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/perception"
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// link is a Receiver on a loopback port plus a Sender and a raw socket aimed at it.
type link struct {
	r   *perception.Receiver
	s   *perception.Sender
	raw *net.UDPConn
}

func newLink(t *testing.T, opts perception.ReceiverOptions) *link {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	r, err := perception.Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	s, err := perception.Dial(r.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	raw, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(r.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return &link{r: r, s: s, raw: raw}
}

// waitDatagrams waits until the receiver has read n datagrams in all.
func (l *link) waitDatagrams(t *testing.T, n uint64) perception.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := l.r.Stats()
		if st.Datagrams >= n {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver read %d datagrams, want %d", st.Datagrams, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *link) send(t *testing.T, seq uint64) {
	t.Helper()
	d := sample(seq)
	if err := l.s.Send(&d); err != nil {
		t.Fatal(err)
	}
}

func TestReceiverKeepsLatestInOrder(t *testing.T) {
	l := newLink(t, perception.ReceiverOptions{})
	var got perception.Datagram
	if st := l.r.Latest(time.Now(), &got); st.Valid || !st.Stale {
		t.Fatalf("before any datagram: %+v", st)
	}
	// Each step sends one datagram and names what the receiver must then hold and count.
	steps := []struct {
		name  string
		seq   uint64
		holds uint64
		stats perception.Stats
	}{
		{"first", 100, 100, perception.Stats{Datagrams: 1, Accepted: 1}},
		{"next", 101, 101, perception.Stats{Datagrams: 2, Accepted: 2}},
		{"gap of two", 104, 104, perception.Stats{Datagrams: 3, Accepted: 3, Lost: 2}},
		{"late", 102, 104, perception.Stats{Datagrams: 4, Accepted: 3, Lost: 2, OutOfOrder: 1}},
		{"duplicate", 104, 104, perception.Stats{Datagrams: 5, Accepted: 3, Lost: 2, OutOfOrder: 2}},
		{"window edge", 104 - perception.ReorderWindow, 104, perception.Stats{Datagrams: 6, Accepted: 3, Lost: 2, OutOfOrder: 3}},
		{"jump ahead", 1000, 1000, perception.Stats{Datagrams: 7, Accepted: 4, Lost: 897, OutOfOrder: 3}},
		{"sender restart", 1000 - perception.ReorderWindow - 1, 935, perception.Stats{Datagrams: 8, Accepted: 5, Lost: 897, OutOfOrder: 3, Restarts: 1}},
		{"after restart", 936, 936, perception.Stats{Datagrams: 9, Accepted: 6, Lost: 897, OutOfOrder: 3, Restarts: 1}},
		{"restart at zero", 0, 0, perception.Stats{Datagrams: 10, Accepted: 7, Lost: 897, OutOfOrder: 3, Restarts: 2}},
	}
	for i, s := range steps {
		l.send(t, s.seq)
		st := l.waitDatagrams(t, uint64(i+1))
		if st != s.stats {
			t.Fatalf("%s: stats %+v, want %+v", s.name, st, s.stats)
		}
		status := l.r.Latest(time.Now(), &got)
		if want := sample(s.holds); !status.Valid || status.Stale || got != want {
			t.Fatalf("%s: status %+v, holds seq %d, want %d", s.name, status, got.Seq, s.holds)
		}
	}
}

func TestReceiverCountsInvalid(t *testing.T) {
	l := newLink(t, perception.ReceiverOptions{})
	good := sample(3)
	valid := encode(t, &good)
	edited := func(off int, b ...byte) []byte {
		out := append([]byte(nil), valid...)
		copy(out[off:], b)
		return out
	}
	for _, in := range [][]byte{
		valid[:100],
		append(append([]byte(nil), valid...), 0),
		make([]byte, 9000), // larger than the receive buffer: truncated, still too long
		edited(0, 'X'),
		edited(4, 9),
		edited(56+4*7, 0, 0, 0x80, 0x7f), // +Inf height
	} {
		if _, err := l.raw.Write(in); err != nil {
			t.Fatal(err)
		}
	}
	st := l.waitDatagrams(t, 6)
	want := perception.Stats{Datagrams: 6, Short: 1, Long: 2, BadMagic: 1, BadVersion: 1, NonFinite: 1}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	var got perception.Datagram
	if status := l.r.Latest(time.Now(), &got); status.Valid {
		t.Fatal("an invalid datagram was published")
	}
	// The stream goes on after garbage.
	l.send(t, 4)
	l.waitDatagrams(t, 7)
	if status := l.r.Latest(time.Now(), &got); !status.Valid || got.Seq != 4 {
		t.Fatalf("after a good datagram: %+v, seq %d", status, got.Seq)
	}
}

func TestReceiverStaleness(t *testing.T) {
	const staleAfter = 200 * time.Millisecond
	l := newLink(t, perception.ReceiverOptions{StaleAfter: staleAfter})
	before := time.Now()
	l.send(t, 1)
	l.waitDatagrams(t, 1)
	after := time.Now() // the datagram arrived between before and after
	var got perception.Datagram
	for _, tc := range []struct {
		name  string
		at    time.Time
		stale bool
	}{
		{"just arrived", after, false},
		{"still fresh", before.Add(staleAfter - time.Millisecond), false},
		{"stale", after.Add(staleAfter + time.Millisecond), true},
		{"a time before the arrival", before.Add(-time.Second), false},
	} {
		st := l.r.Latest(tc.at, &got)
		minAge, maxAge := max(tc.at.Sub(after), 0), max(tc.at.Sub(before), 0)
		if !st.Valid || st.Stale != tc.stale || st.Age < minAge || st.Age > maxAge {
			t.Errorf("%s: %+v, want stale %v, age in [%v, %v]", tc.name, st, tc.stale, minAge, maxAge)
		}
	}
}

func TestLatestAllocatesNothing(t *testing.T) {
	l := newLink(t, perception.ReceiverOptions{})
	l.send(t, 1)
	l.waitDatagrams(t, 1)
	var got perception.Datagram
	now := time.Now()
	if allocs := testing.AllocsPerRun(1000, func() { l.r.Latest(now, &got) }); allocs != 0 {
		t.Fatalf("Latest: %v allocations", allocs)
	}
	if allocs := testing.AllocsPerRun(1000, func() { l.r.Stats() }); allocs != 0 {
		t.Fatalf("Stats: %v allocations", allocs)
	}
	d := sample(2)
	if allocs := testing.AllocsPerRun(100, func() {
		if err := l.s.Send(&d); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("Send: %v allocations", allocs)
	}
}

// consistent is a datagram whose every field encodes its sequence number, so that a copy mixing
// two datagrams shows.
func consistent(seq uint64) perception.Datagram {
	d := perception.Datagram{Seq: seq, Stamp: time.Duration(seq), Yaw: float64(seq)}
	for k := range d.Position {
		d.Position[k] = float64(seq)
	}
	for i := range d.Heights {
		d.Heights[i] = float32(seq % (1 << 20))
	}
	return d
}

// Readers racing the writer never see a torn datagram and always see the sequence move forward.
func TestLatestNeverTorn(t *testing.T) {
	l := newLink(t, perception.ReceiverOptions{})
	var stop atomic.Bool
	var wg sync.WaitGroup
	reads := make([]int, 2)
	for g := range reads {
		wg.Go(func() {
			var d perception.Datagram
			var last uint64
			for !stop.Load() {
				if !l.r.Latest(time.Now(), &d).Valid {
					continue
				}
				if d != consistent(d.Seq) {
					t.Errorf("torn read: seq %d, yaw %v, x %v, h[0] %v, h[120] %v", d.Seq, d.Yaw, d.Position[0], d.Heights[0], d.Heights[120])
					return
				}
				if d.Seq < last {
					t.Errorf("went back from %d to %d", last, d.Seq)
					return
				}
				last = d.Seq
				reads[g]++
			}
		})
	}
	const n = 3000
	for seq := uint64(1); seq <= n; seq++ {
		d := consistent(seq)
		if err := l.s.Send(&d); err != nil {
			t.Fatal(err)
		}
		if seq%20 == 0 {
			time.Sleep(time.Millisecond) // let the receiver keep up: loopback drops a full queue
		}
	}
	// Wait for the stream to go quiet: UDP may lose some, but whatever arrived has been handled.
	st := l.waitDatagrams(t, 1)
	for {
		time.Sleep(50 * time.Millisecond)
		now := l.r.Stats()
		if now == st {
			break
		}
		st = now
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("stats %+v, reads per reader %v", st, reads)
	var last perception.Datagram
	l.r.Latest(time.Now(), &last)
	if st.OutOfOrder != 0 || st.Restarts != 0 || st.Accepted+st.Lost != last.Seq || st.Accepted < n/2 {
		t.Fatalf("stats %+v, holding seq %d", st, last.Seq)
	}
}

func BenchmarkLatest(b *testing.B) {
	r, err := perception.Listen("127.0.0.1:0", perception.ReceiverOptions{Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, err := perception.Dial(r.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := sample(1)
	if err := s.Send(&d); err != nil {
		b.Fatal(err)
	}
	for r.Stats().Accepted == 0 {
		time.Sleep(time.Millisecond)
	}
	var got perception.Datagram
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r.Latest(now, &got)
	}
}
