package driver

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/skills"
)

// scriptedLink delivers one sensor packet per millisecond of the fake clock. A packet's arrival
// at the host (its kernel stamp) can come late (the board's lateness), and the loop can take it
// late (the loop's own: Receive returns only then).
type scriptedLink struct {
	start      time.Time
	n          int
	boardLate  map[int]time.Duration // by packet number: sent late by the board
	readerLate map[int]time.Duration // by packet number: arrived on time, taken late
	arrival    time.Time
	end        int
	cancel     context.CancelFunc
}

func (l *scriptedLink) Receive(out *proto.Sensor) error {
	l.n++
	if l.n == l.end {
		l.cancel()
	}
	l.arrival = l.start.Add(time.Duration(l.n)*time.Millisecond + l.boardLate[l.n])
	take := l.arrival.Add(l.readerLate[l.n])
	time.Sleep(time.Until(take))
	*out = proto.Sensor{}
	return nil
}

func (l *scriptedLink) Send(*proto.Command) error { return nil }

func (l *scriptedLink) Arrival() (time.Time, error) { return l.arrival, nil }

// The real-time driver tells missed periods the board caused (late at the socket) from its
// own (on time at the socket, taken late), on the fake clock.
func TestRealTimeTellsWhichSideMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, constantBank(t, [skills.NumJoints]float32{}), nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		link := &scriptedLink{
			start: time.Now(), end: 100, cancel: cancel,
			// packet 20 comes 3 ms late from the board; the next ones follow its new phase
			boardLate: map[int]time.Duration{},
			// the loop takes packet 50 2.2 ms late, and 70 5.4 ms late
			readerLate: map[int]time.Duration{50: 2200 * time.Microsecond, 70: 5400 * time.Microsecond},
		}
		for n := 20; n <= 100; n++ {
			link.boardLate[n] = 3 * time.Millisecond
		}
		d := &RealTime{Core: r.core, Link: link, Arrival: link.Arrival}
		if err := d.Run(ctx); err != context.Canceled {
			t.Fatalf("Run: %v", err)
		}
		tm := d.Timing()
		// Board: one gap of 4 ms, 3 periods missed. Loop: packet 50 read 2.2 ms late (2
		// periods), 70 read 5.4 ms late (5); the packets after them come on time, so their
		// shorter gaps miss nothing.
		if tm.BoardMissed != 3 || tm.Missed != 3+2+5 {
			t.Fatalf("missed %d, by the board %d; want 10 and 3", tm.Missed, tm.BoardMissed)
		}
		if tm.ReadDelay.Max() != 5400*time.Microsecond {
			t.Fatalf("longest wait in the socket %v, want 5.4ms", tm.ReadDelay.Max())
		}
	})
}
