package recorder

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/dualforce/dualforce/hw/solo12"
)

// ActionLen is the number of values of an action: one position target per joint.
const ActionLen = solo12.NumJoints

// Errors Record returns. They are preallocated so that returning one allocates nothing.
var (
	ErrRingFull    = errors.New("recorder: ring full, tick dropped")
	ErrInvalidTick = errors.New("recorder: tick refused (payload length, observation/action/events too long, or negative time)")
	ErrClosed      = errors.New("recorder: closed")
)

// Tick is what the runtime records of one link tick. Empty fields are not recorded: Sensor is
// empty when no sensor packet arrived, Observation, Action and Events on ticks without a
// policy step.
type Tick struct {
	Index    uint64 // link tick counter; must increase from one Record to the next
	UnixNano int64  // log time, ns since the Unix epoch; not negative
	Sensor   []byte // proto.SensorLen bytes or none
	Command  []byte // proto.CommandLen bytes or none
	// Observation is the policy input (at most Options.MaxObservation values).
	Observation []float32
	// Action is the policy output, ActionLen values.
	Action []float32
	// Events are newline-separated lines, each a JSON object or plain text (at most
	// Options.MaxEventBytes bytes in all). Empty lines are skipped; the reader returns every
	// line ended by '\n'.
	Events []byte
	// Input is the runtime core's other inputs of this tick (time, flags, slider state,
	// perception, operator commands applied), encoded by runtime/core so that replay can re-run
	// the core; at most MaxInputBytes bytes.
	Input []byte
}

// MaxInputBytes bounds Tick.Input.
const MaxInputBytes = 4096

// Options configure a Recorder. Zero fields take the defaults noted.
type Options struct {
	Dir             string        // required; created if missing
	Prefix          string        // file name prefix; "flight"
	MaxFileBytes    int64         // rotate past this size; 256 MiB
	MaxFileDuration time.Duration // rotate when a file spans this much tick time; 0: size only
	MaxFiles        int           // recordings kept on disk, the one being written included; 20
	RingTicks       int           // ticks the ring holds; 2048 (about 2 s at 1 kHz)
	MaxObservation  int           // largest observation; 256
	MaxEventBytes   int           // largest Tick.Events; 1024
	ChunkSize       int64         // uncompressed MCAP chunk size; 256 KiB
	// Compression of the chunks: mcap.CompressionZSTD (default), mcap.CompressionLZ4 or
	// "none" (written as mcap.CompressionNone).
	Compression   mcap.CompressionFormat
	DrainInterval time.Duration     // how often the writer empties the ring; 20 ms
	Metadata      map[string]string // copied into every file (robot id, bank, layout, ...)
	Logger        *slog.Logger      // slog.Default()
}

// CompressionNone selects uncompressed chunks in Options.Compression (mcap's own constant is
// the empty string, which here means the default).
const CompressionNone mcap.CompressionFormat = "none"

func (o *Options) setDefaults() error {
	if o.Dir == "" {
		return errors.New("recorder: no directory")
	}
	if o.Prefix == "" {
		o.Prefix = "flight"
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = 256 << 20
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = 20
	}
	if o.RingTicks == 0 {
		o.RingTicks = 2048
	}
	if o.MaxObservation == 0 {
		o.MaxObservation = 256
	}
	if o.MaxEventBytes == 0 {
		o.MaxEventBytes = 1024
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = 256 << 10
	}
	switch o.Compression {
	case "":
		o.Compression = mcap.CompressionZSTD
	case CompressionNone:
		o.Compression = mcap.CompressionNone
	case mcap.CompressionZSTD, mcap.CompressionLZ4:
	default:
		return fmt.Errorf("recorder: unknown compression %q", o.Compression)
	}
	if o.DrainInterval == 0 {
		o.DrainInterval = 20 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.MaxFileBytes < 0, o.MaxFileDuration < 0, o.MaxFiles < 0, o.RingTicks < 0,
		o.MaxObservation < 0, o.MaxEventBytes < 0, o.DrainInterval < 0:
		return errors.New("recorder: negative option")
	case o.ChunkSize < 0 || o.ChunkSize > maxChunkSize:
		return fmt.Errorf("recorder: chunk size %d outside [0, %d]", o.ChunkSize, maxChunkSize)
	case o.MaxObservation > maxValues:
		return fmt.Errorf("recorder: observation size %d above %d", o.MaxObservation, maxValues)
	case o.MaxEventBytes > maxEventBytes:
		return fmt.Errorf("recorder: event bytes %d above %d", o.MaxEventBytes, maxEventBytes)
	}
	return nil
}

// Bounds that keep every record well inside what the reader accepts.
const (
	maxChunkSize  = 4 << 20
	maxValues     = 4096
	maxEventBytes = 64 << 10
)

// Stats count what happened to the ticks passed to Record.
type Stats struct {
	Recorded    uint64 // queued by Record
	Dropped     uint64 // refused because the ring was full
	Rejected    uint64 // refused as invalid (ErrInvalidTick)
	Written     uint64 // written to a file
	Lost        uint64 // dequeued while no file could be written (disk errors)
	WriteErrors uint64 // failed file operations (each is also logged)
	Files       uint64 // files finished
}

// Recorder is the flight recorder. Record is for the control thread; everything else runs on
// the writer goroutine that New starts.
type Recorder struct {
	opts Options
	ring *ring
	out  *rotator

	closed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	err    error // first error of the final finish, set before done closes

	recorded, dropped, rejected atomic.Uint64
}

// New creates opts.Dir if needed and starts the writer goroutine. No file is created before the
// first tick.
func New(opts Options) (*Recorder, error) {
	return newRecorder(opts, nil)
}

// newRecorder lets tests put a slow sink between the MCAP writer and the file.
func newRecorder(opts Options, wrap func(io.Writer) io.Writer) (*Recorder, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r := &Recorder{
		opts: opts,
		ring: newRing(opts.RingTicks, opts.MaxObservation, opts.MaxEventBytes),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	r.out = newRotator(&r.opts, wrap, r.stats)
	go r.run()
	return r, nil
}

// Record queues t for writing. It copies t, so the caller may reuse every buffer of t as soon
// as it returns. It never blocks and allocates nothing; it returns ErrRingFull (tick dropped),
// ErrInvalidTick or ErrClosed without queuing anything. Only one goroutine may call it.
func (r *Recorder) Record(t *Tick) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if !r.ring.fits(t) {
		r.rejected.Add(1)
		return ErrInvalidTick
	}
	if !r.ring.push(t) {
		r.dropped.Add(1)
		return ErrRingFull
	}
	r.recorded.Add(1)
	return nil
}

// Stats returns the counters so far; it is safe from any goroutine.
func (r *Recorder) Stats() Stats {
	s := r.out.counters()
	s.Recorded = r.recorded.Load()
	s.Dropped = r.dropped.Load()
	s.Rejected = r.rejected.Load()
	return s
}

func (r *Recorder) stats() Stats { return r.Stats() }

// Close stops accepting ticks, writes everything queued, finishes the current file and waits
// for the writer goroutine. Call it after the control loop has stopped calling Record. It
// returns the first error of finishing the last file, if any.
func (r *Recorder) Close() error {
	r.once.Do(func() {
		r.closed.Store(true)
		close(r.stop)
	})
	<-r.done
	return r.err
}

func (r *Recorder) run() {
	defer close(r.done)
	t := time.NewTicker(r.opts.DrainInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			r.drain()
			r.err = r.out.finish(r.opts.MaxFiles)
			return
		case <-t.C:
			r.drain()
		}
	}
}

func (r *Recorder) drain() {
	for {
		s := r.ring.peek()
		if s == nil {
			return
		}
		r.out.write(s)
		r.ring.release()
	}
}
