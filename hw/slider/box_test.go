package slider

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeBox is a Box fed through an io.Pipe; send blocks until the Box has read every byte, and
// synctest.Wait then guarantees it has also published them.
type pipeBox struct {
	*Box
	w *io.PipeWriter
}

func newPipeBox(t *testing.T, staleAfter time.Duration) *pipeBox {
	t.Helper()
	r, w := io.Pipe()
	pb := &pipeBox{NewBox(r, staleAfter), w}
	t.Cleanup(func() { _ = pb.Close() })
	pb.send(t, "sync: the first line is always skipped\r\n")
	return pb
}

func (pb *pipeBox) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(pb.w, l); err != nil {
			t.Fatalf("write %q: %v", l, err)
		}
	}
	synctest.Wait()
}

func TestBoxStaleness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 0)
		if s := box.Snapshot(time.Now()); !s.Stale || !s.Fault() || !s.Halt() {
			t.Fatalf("before any line: %+v, want stale fault", s)
		}
		box.send(t, "1 0 1023\r\n")
		time.Sleep(DefaultStaleAfter)
		s := box.Snapshot(time.Now())
		if s.Stale || s.Fault() || s.Halt() || s.Age != DefaultStaleAfter {
			t.Fatalf("exactly StaleAfter after a line: %+v, want fresh", s)
		}
		time.Sleep(time.Nanosecond)
		if s := box.Snapshot(time.Now()); !s.Stale || !s.Fault() {
			t.Fatalf("just past StaleAfter: %+v, want stale", s)
		}
		box.send(t, "1 1023 0\r\n")
		if s := box.Snapshot(time.Now()); s.Stale || s.Age != 0 || s.Sliders != [4]float64{1, 0} {
			t.Fatalf("after a new line: %+v, want fresh", s)
		}
		// The caller's clock, not the box's, decides: a time before the line means age 0.
		if s := box.Snapshot(time.Now().Add(-time.Second)); s.Stale || s.Age != 0 {
			t.Fatalf("with an earlier clock: %+v", s)
		}
		if s := box.Snapshot(time.Now().Add(time.Second)); !s.Stale || s.Age != time.Second {
			t.Fatalf("with a later clock: %+v", s)
		}
	})
}

func TestBoxStaleAfterConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 5*time.Millisecond)
		box.send(t, "1 0 0\n")
		time.Sleep(5 * time.Millisecond)
		if s := box.Snapshot(time.Now()); s.Stale {
			t.Fatalf("at 5 ms: %+v", s)
		}
		time.Sleep(time.Microsecond)
		if s := box.Snapshot(time.Now()); !s.Stale {
			t.Fatalf("after 5 ms: %+v", s)
		}
	})
}

func TestBoxEStopLatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 0)
		if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrStale) {
			t.Fatalf("reset with no line: %v, want ErrStale", err)
		}
		box.send(t, "1 10 20\r\n")
		if s := box.Snapshot(time.Now()); s.Latched || s.Pressed || s.Halt() {
			t.Fatalf("released: %+v", s)
		}
		if err := box.ResetEStop(time.Now()); err != nil {
			t.Fatalf("reset while not latched: %v", err)
		}

		box.send(t, "0 10 20\r\n")
		if s := box.Snapshot(time.Now()); !s.Latched || !s.Pressed || !s.Halt() {
			t.Fatalf("pressed: %+v, want latched", s)
		}
		if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrEStopPressed) {
			t.Fatalf("reset while pressed: %v, want ErrEStopPressed", err)
		}
		box.send(t, "1 10 20\r\n", "1 10 20\r\n", "1 1 2 3 4\r\n")
		if s := box.Snapshot(time.Now()); !s.Latched || s.Pressed || !s.Halt() {
			t.Fatalf("released after press: %+v, want still latched", s)
		}
		// A garbage line is not a release: the newest good line still decides.
		box.send(t, "0 x y\r\n")
		time.Sleep(DefaultStaleAfter + time.Millisecond)
		if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrStale) {
			t.Fatalf("reset when stale: %v, want ErrStale", err)
		}
		if s := box.Snapshot(time.Now()); !s.Latched {
			t.Fatalf("failed reset unlatched: %+v", s)
		}
		box.send(t, "1 10 20\r\n")
		if err := box.ResetEStop(time.Now()); err != nil {
			t.Fatalf("reset when released: %v", err)
		}
		if s := box.Snapshot(time.Now()); s.Latched || s.Halt() {
			t.Fatalf("after reset: %+v", s)
		}
		box.send(t, "0 10 20\r\n", "1 10 20\r\n")
		if s := box.Snapshot(time.Now()); !s.Latched {
			t.Fatalf("second press: %+v, want latched again", s)
		}
	})
}

func TestBoxCountsLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 0)
		box.send(t,
			"1 100 200\r\n",
			"garbage\r\n",
			"\r\n",
			"1 2\r\n",
			"1 2000 3\r\n",
			"1 1 2 3 4\r\n",
			"1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30\r\n",
		)
		s := box.Snapshot(time.Now())
		if s.GoodLines != 2 || s.GarbageLines != 5 {
			t.Fatalf("good %d garbage %d, want 2 and 5", s.GoodLines, s.GarbageLines)
		}
		if s.LastGarbage == nil || s.LastGarbage.Reason() != ReasonTooLong {
			t.Fatalf("last garbage %v, want too long", s.LastGarbage)
		}
		want := [4]float64{1.0 / 1023, 2.0 / 1023, 3.0 / 1023, 4.0 / 1023}
		if s.N != 4 || s.Sliders != want {
			t.Fatalf("sliders %v N %d, want %v N 4", s.Sliders, s.N, want)
		}
		// A line split across writes is still one line.
		box.send(t, "1 5", "11 10", "23\r", "\n")
		if s := box.Snapshot(time.Now()); s.GoodLines != 3 || s.N != 2 || s.Sliders[0] != 511.0/1023 {
			t.Fatalf("split line: %+v", s)
		}
	})
}

func TestBoxStreamEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 0)
		box.send(t, "1 1 1\n")
		if err := box.Err(); err != nil {
			t.Fatalf("Err while running: %v", err)
		}
		_ = box.w.CloseWithError(io.ErrUnexpectedEOF)
		synctest.Wait()
		s := box.Snapshot(time.Now())
		if !s.ReaderStopped || !s.Fault() || s.Stale {
			t.Fatalf("after the stream ended: %+v, want a fault that is not (yet) staleness", s)
		}
		if err := box.Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Err = %v, want the read error", err)
		}
		if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrStale) {
			t.Fatalf("reset without a stream: %v", err)
		}
	})
}

func TestBoxClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newPipeBox(t, 0)
		if err := box.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := box.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := box.Err(); err != nil {
			t.Fatalf("Err after Close = %v, want nil", err)
		}
		if s := box.Snapshot(time.Now()); !s.ReaderStopped {
			t.Fatalf("after Close: %+v", s)
		}
		if _, err := box.w.Write([]byte("1 1 1\n")); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("source not closed: write error %v", err)
		}
	})
}

func TestBoxHotPathsAllocateNothing(t *testing.T) {
	box := idleBox(t)
	var asm lineAssembler
	box.consume(&asm, []byte("sync\n"), 0)
	chunk := []byte("1 1 2 3 4\r\n0 5 6\r\nbad\r\n" + string(make([]byte, 100)) + "\n")
	now := time.Now()
	tests := map[string]func(){
		"consume":    func() { box.consume(&asm, chunk, time.Millisecond) },
		"Snapshot":   func() { _ = box.Snapshot(now) },
		"ResetEStop": func() { _ = box.ResetEStop(now) },
	}
	for name, f := range tests {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// idleBox is a Box whose reader never receives anything, so that tests and benchmarks can
// drive consume directly as the only writer.
func idleBox(tb testing.TB) *Box {
	r, _ := io.Pipe()
	box := NewBox(r, 0)
	tb.Cleanup(func() { _ = box.Close() })
	return box
}

// TestBoxSnapshotConsistent races readers against a writer whose lines always carry four equal
// sliders; a torn copy would show unequal ones, or ReaderStopped before the last line's count.
// Removing the seqlock's closing sequence check makes it fail; run it with -race as well.
func TestBoxSnapshotConsistent(t *testing.T) {
	r, w := io.Pipe()
	box := NewBox(r, time.Hour)
	defer box.Close()
	const lines = 200000
	var stream []byte
	stream = append(stream, "sync\n"...)
	for i := range lines {
		v := i % (ADCMax + 1)
		stream = fmt.Appendf(stream, "1 %d %d %d %d\r\n", v, v, v, v)
	}
	go func() {
		// Short writes make the reader publish while the snapshotters are spinning.
		for chunk := range slices.Chunk(stream, 256) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_ = w.Close()
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				s := box.Snapshot(time.Now())
				if s.Sliders[1] != s.Sliders[0] || s.Sliders[2] != s.Sliders[0] || s.Sliders[3] != s.Sliders[0] {
					t.Errorf("torn snapshot: %v", s.Sliders)
					return
				}
				if s.ReaderStopped {
					if s.GoodLines != lines {
						t.Errorf("good lines %d, want %d", s.GoodLines, lines)
					}
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkSnapshot(b *testing.B) {
	box := idleBox(b)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = box.Snapshot(now)
	}
}

func BenchmarkConsume(b *testing.B) {
	box := idleBox(b)
	var asm lineAssembler
	chunk := []byte("1 512 1023 0 777\r\n")
	box.consume(&asm, []byte("sync\n"), 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		box.consume(&asm, chunk, 0)
	}
}

// FuzzBoxConsume feeds arbitrary bytes, in arbitrary chunks, through a Box: every line after the
// first newline is counted exactly once, and whatever is published stays in range.
func FuzzBoxConsume(f *testing.F) {
	f.Add([]byte("x\n1 2 3\r\n0 1 2 3 4\nbad\n\n"), uint8(3))
	f.Add([]byte("1 2 3\r\n"+strings.Repeat("7", 300)+"\n0 0 1023\n"), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		box := idleBox(t)
		var asm lineAssembler
		for c := range slices.Chunk(stream, max(int(chunk), 1)) {
			box.consume(&asm, c, 0)
		}
		s := box.Snapshot(box.epoch)
		if want := uint64(len(referenceLines(stream))); s.GoodLines+s.GarbageLines != want {
			t.Fatalf("good %d + garbage %d lines, want %d in all", s.GoodLines, s.GarbageLines, want)
		}
		if (s.GoodLines > 0) == s.Stale || s.N != 0 && s.N != 2 && s.N != 4 {
			t.Fatalf("inconsistent snapshot %+v", s)
		}
		for _, v := range s.Sliders {
			if v < 0 || v > 1 {
				t.Fatalf("slider out of range: %+v", s)
			}
		}
	})
}
