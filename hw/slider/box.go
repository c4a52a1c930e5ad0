package slider

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStaleAfter is how long the box may stay silent before Snapshot reports a fault: a
// hundred missed lines at the box's 0.5 ms period.
const DefaultStaleAfter = 50 * time.Millisecond

// Errors of ResetEStop.
var (
	ErrEStopPressed = errors.New("slider: e-stop button is still pressed")
	ErrStale        = errors.New("slider: no recent line from the slider box")
)

// Snapshot is the state of the box as seen at one instant.
type Snapshot struct {
	// Sliders and N come from the newest good line; before the first one they are zero.
	Sliders [MaxSliders]float64
	N       int
	// Pressed is what the newest good line says about the E-stop button.
	Pressed bool
	// Latched stays true from the first pressed line until a successful ResetEStop.
	Latched bool
	// Stale is true when no good line arrived within StaleAfter before the time passed to
	// Snapshot, or none ever did.
	Stale bool
	// Age is the time from the newest good line to the time passed to Snapshot (0 if none).
	Age time.Duration
	// GoodLines and GarbageLines count lines since the box was opened. The first (partial)
	// line after opening is skipped and counted in neither.
	GoodLines, GarbageLines uint64
	// LastGarbage says why the newest garbage line was rejected; nil if there was none.
	LastGarbage *LineError
	// ReaderStopped is true once the stream ended (unplugged, read error, Close).
	ReaderStopped bool
}

// Fault reports that the box cannot be trusted right now: silent too long or gone.
func (s Snapshot) Fault() bool { return s.Stale || s.ReaderStopped }

// Halt reports that the robot must be brought to its safe damping state.
func (s Snapshot) Halt() bool { return s.Latched || s.Fault() }

// Box reads the slider box's stream on its own goroutine and publishes the newest state through
// Snapshot. All methods are safe for concurrent use.
type Box struct {
	src        io.Reader
	staleAfter time.Duration
	epoch      time.Time // arrival times are stored as monotonic offsets from here

	// Written only by the reader goroutine, inside the seqlock: seq is odd while a write is in
	// progress, so a reader that saw the same even seq before and after its loads has a
	// consistent copy. Every field is atomic so that readers racing a writer stay well-defined.
	seq         atomic.Uint64
	sliders     [MaxSliders]atomic.Uint64 // math.Float64bits
	n           atomic.Int64
	pressed     atomic.Bool
	presses     atomic.Uint64 // good lines reporting the button pressed, ever
	good        atomic.Uint64
	garbage     atomic.Uint64
	lastGood    atomic.Int64 // arrival of the newest good line, ns after epoch
	lastGarbage atomic.Pointer[LineError]
	stopped     atomic.Bool

	// cleared is the value of presses acknowledged by the last successful ResetEStop; the
	// E-stop is latched while presses > cleared, so a press racing a reset is never lost.
	cleared atomic.Uint64

	firstGood chan struct{} // closed by the reader at the first good line
	done      chan struct{} // closed when the reader goroutine has returned
	readErr   error         // why the reader stopped; written before done is closed

	stopping  atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// NewBox starts reading lines from src. If src is also an io.Closer, Close closes it to stop
// the reader. staleAfter <= 0 means DefaultStaleAfter.
func NewBox(src io.Reader, staleAfter time.Duration) *Box {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	b := &Box{
		src:        src,
		staleAfter: staleAfter,
		epoch:      time.Now(),
		firstGood:  make(chan struct{}),
		done:       make(chan struct{}),
	}
	go b.run()
	return b
}

// readChunk is large enough for several milliseconds of the stream (11.5 kB/s at 115200 baud).
const readChunk = 512

func (b *Box) run() {
	defer close(b.done)
	buf := make([]byte, readChunk)
	var asm lineAssembler
	for {
		n, err := b.src.Read(buf)
		if n > 0 {
			b.consume(&asm, buf[:n], time.Since(b.epoch))
		}
		if err != nil {
			if !b.stopping.Load() {
				b.readErr = fmt.Errorf("slider: reading the box: %w", err)
				slog.Warn("slider box stream ended", "err", err)
			}
			b.seq.Add(1)
			b.stopped.Store(true)
			b.seq.Add(1)
			return
		}
	}
}

// consume feeds one chunk of the stream, all of which arrived at the given offset from epoch.
func (b *Box) consume(asm *lineAssembler, p []byte, at time.Duration) {
	for len(p) > 0 {
		used, line, tooLong, ended := asm.next(p)
		p = p[used:]
		if !ended {
			continue
		}
		if tooLong {
			b.publishGarbage(malformed(ReasonTooLong, FieldNone))
			continue
		}
		r, lerr := parseLine(line)
		if lerr != nil {
			b.publishGarbage(lerr)
			continue
		}
		b.publishGood(&r, at)
	}
}

func (b *Box) publishGood(r *Reading, at time.Duration) {
	b.seq.Add(1)
	for i := range b.sliders {
		b.sliders[i].Store(math.Float64bits(r.Sliders[i]))
	}
	b.n.Store(int64(r.N))
	b.pressed.Store(r.EStop)
	if r.EStop {
		b.presses.Add(1)
	}
	first := b.good.Add(1) == 1
	b.lastGood.Store(int64(at))
	b.seq.Add(1)
	if first {
		close(b.firstGood)
	}
}

func (b *Box) publishGarbage(e *LineError) {
	b.seq.Add(1)
	b.garbage.Add(1)
	b.lastGarbage.Store(e)
	b.seq.Add(1)
}

// Snapshot returns the newest state, judging staleness against now. It neither blocks nor
// allocates; it only retries while the reader is in the middle of publishing a line.
func (b *Box) Snapshot(now time.Time) Snapshot {
	s, _ := b.load(now)
	return s
}

// load is Snapshot plus the press count the copy is consistent with.
func (b *Box) load(now time.Time) (s Snapshot, presses uint64) {
	var lastGood int64
	for {
		seq := b.seq.Load()
		if seq&1 != 0 {
			runtime.Gosched()
			continue
		}
		for i := range s.Sliders {
			s.Sliders[i] = math.Float64frombits(b.sliders[i].Load())
		}
		s.N = int(b.n.Load())
		s.Pressed = b.pressed.Load()
		presses = b.presses.Load()
		s.GoodLines = b.good.Load()
		s.GarbageLines = b.garbage.Load()
		lastGood = b.lastGood.Load()
		s.LastGarbage = b.lastGarbage.Load()
		s.ReaderStopped = b.stopped.Load()
		if b.seq.Load() == seq {
			break
		}
	}
	s.Latched = presses > b.cleared.Load()
	if s.GoodLines == 0 {
		s.Stale = true
		return s, presses
	}
	// A caller's clock read just before the line arrived yields a negative age.
	s.Age = max(now.Sub(b.epoch)-time.Duration(lastGood), 0)
	s.Stale = s.Age > b.staleAfter
	return s, presses
}

// ResetEStop clears the latched E-stop. It refuses while the newest line reports the button
// pressed (ErrEStopPressed) or while the box is stale or gone (ErrStale), both judged at now.
// Resetting an E-stop that is not latched succeeds. A press arriving while the reset runs keeps
// the E-stop latched.
func (b *Box) ResetEStop(now time.Time) error {
	s, presses := b.load(now)
	if s.Fault() {
		return ErrStale
	}
	if s.Pressed {
		return ErrEStopPressed
	}
	for {
		cleared := b.cleared.Load()
		if cleared >= presses || b.cleared.CompareAndSwap(cleared, presses) {
			return nil
		}
	}
}

// Err returns why the stream ended on its own (nil while it runs, and after Close).
func (b *Box) Err() error {
	select {
	case <-b.done:
		return b.readErr
	default:
		return nil
	}
}

// Close stops the reader goroutine and closes the source if it is an io.Closer. It returns the
// source's Close error; calling it again returns the same.
func (b *Box) Close() error {
	b.closeOnce.Do(func() {
		b.stopping.Store(true)
		if c, ok := b.src.(io.Closer); ok {
			b.closeErr = c.Close()
		}
		<-b.done
	})
	return b.closeErr
}
