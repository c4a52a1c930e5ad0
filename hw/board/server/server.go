package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// DefaultMAC is a locally administered address for an emulated board.
var DefaultMAC = proto.MAC{0x02, 0xdf, 0xb0, 0xa2, 0xd0, 0x01}

// Options configure a Server. The zero value runs in real time with DefaultMAC.
type Options struct {
	MAC proto.MAC // source address of the board's frames (zero: DefaultMAC)
	// Lockstep ticks the board once per received init or command instead of on the 1 kHz clock:
	// time stands still while the host is silent. For benchmarks of the link round trip and for
	// simulations that run faster or slower than real time.
	Lockstep bool
	// Priority, when 1..99, runs the tick and reader threads with SCHED_FIFO at that priority, as
	// the real board's firmware owns its CPU. Without the privilege the server logs and goes on.
	// On a busy machine make the whole process real-time too (clock.RealtimeProcess), or the Go
	// scheduler's ordinary threads can stall these ones for tens of milliseconds.
	Priority int
	Logger   *slog.Logger // nil: slog.Default()
}

// Stats counts what a Server did. Lateness is that of the real-time clock.
type Stats struct {
	Ticks       uint64 // board ticks run
	MissedTicks uint64 // 1 ms deadlines the tick loop overran (real time only)
	FramesIn    uint64 // frames read from the link
	FramesOut   uint64 // frames sent
	Malformed   uint64 // frames that were not v4 master-board payloads
	Overflow    uint64 // frames dropped because the receive ring was full
	SendErrors  uint64 // failed writes (the first one is logged)
	LatenessP50 time.Duration
	LatenessP99 time.Duration
	LatenessMax time.Duration
	// LongestGap is the longest time between two ticks (real time only; 1 ms when none was
	// missed): the board sent nothing for that long, so a host whose link timeout is shorter
	// rightly declared the link lost.
	LongestGap time.Duration
}

// ringSize is how many frames may wait between two ticks: at 1 kHz a host sends one.
const ringSize = 64

// readSlice bounds how long the reader blocks before it checks for shutdown.
const readSlice = 20 * time.Millisecond

// Server runs one board on one link. Create it with New and call Run once.
type Server struct {
	b    *board.Board
	conn link.Conn
	opts Options
	log  *slog.Logger

	ring  ring
	do    chan request
	out   [proto.MaxFrameLen]byte
	stop  atomic.Bool
	stats counters
}

type request struct {
	fn   func(*board.Board)
	done chan struct{}
}

type counters struct {
	ticks, missed, in, out, malformed, overflow, sendErrors atomic.Uint64
	p50, p99, max, longestGap                               atomic.Int64
}

// ring is a single-producer single-consumer queue of frames: the reader owns head and the slots
// from tail+len to head; the tick loop owns tail. The atomics order the slot writes.
type ring struct {
	slots      [ringSize][proto.MaxFrameLen]byte
	lens       [ringSize]int
	head, tail atomic.Uint64
	spill      [proto.MaxFrameLen]byte // where frames go to be dropped when the ring is full
}

// New returns a server for b on conn. The Server owns b from Run until Run returns: touch the
// board meanwhile only through Do.
func New(b *board.Board, conn link.Conn, opts Options) *Server {
	if opts.MAC == (proto.MAC{}) {
		opts.MAC = DefaultMAC
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{b: b, conn: conn, opts: opts, log: log, do: make(chan request)}
}

// Run serves until ctx is done (returning nil) or the link fails.
func (s *Server) Run(ctx context.Context) error {
	if err := s.conn.SetReadTimeout(readSlice); err != nil {
		return fmt.Errorf("board server: %w", err)
	}
	if s.opts.Lockstep {
		return s.runLockstep(ctx)
	}
	return s.runRealtime(ctx)
}

func (s *Server) runRealtime(ctx context.Context) error {
	readErr := make(chan error, 1)
	go func() { readErr <- s.readLoop() }()
	defer func() { s.stop.Store(true) }()

	pacer, err := clock.Start(time.Millisecond)
	if err != nil {
		return fmt.Errorf("board server: %w", err)
	}
	defer pacer.Stop()
	if restore := s.realtime("tick"); restore != nil {
		defer restore()
	}
	var longestGap time.Duration
	for {
		select {
		case <-ctx.Done():
			s.stop.Store(true)
			<-readErr
			return nil
		case err := <-readErr:
			return err
		default:
		}
		tick := pacer.Wait()
		s.stats.missed.Add(uint64(tick.Missed))
		if tick.Gap > longestGap {
			longestGap = tick.Gap
			s.stats.longestGap.Store(int64(longestGap))
		}
		s.drainRing()
		s.serveRequests()
		if err := s.tick(); err != nil {
			s.stop.Store(true)
			<-readErr
			return err
		}
		if n := s.stats.ticks.Load(); n%1000 == 0 {
			st := pacer.Stats()
			s.stats.p50.Store(int64(st.LatenessP50))
			s.stats.p99.Store(int64(st.LatenessP99))
			s.stats.max.Store(int64(st.LatenessMax))
		}
	}
}

// readLoop is the ring's producer. It keeps its OS thread locked until it exits, so the kernel
// wakes the same thread for every frame, and a real-time policy dies with the thread.
func (s *Server) readLoop() error {
	runtime.LockOSThread()
	s.realtime("reader")
	r := &s.ring
	for !s.stop.Load() {
		head := r.head.Load()
		buf := r.spill[:]
		full := head-r.tail.Load() == ringSize
		if !full {
			buf = r.slots[head%ringSize][:]
		}
		n, err := s.conn.ReadFrame(buf)
		switch {
		case errors.Is(err, link.ErrTimeout):
			continue
		case errors.Is(err, link.ErrShortBuffer):
			s.stats.malformed.Add(1) // longer than any master-board frame
			continue
		case errors.Is(err, link.ErrClosed):
			if s.stop.Load() {
				return nil
			}
			return fmt.Errorf("board server: link closed: %w", err)
		case err != nil:
			return fmt.Errorf("board server: read: %w", err)
		}
		s.stats.in.Add(1)
		if full {
			s.stats.overflow.Add(1)
			continue
		}
		r.lens[head%ringSize] = n
		r.head.Store(head + 1)
	}
	return nil
}

func (s *Server) drainRing() {
	r := &s.ring
	for tail, head := r.tail.Load(), r.head.Load(); tail != head; tail++ {
		i := tail % ringSize
		s.handleFrame(r.slots[i][:r.lens[i]])
		r.tail.Store(tail + 1)
	}
}

// handleFrame gives the board one frame's payload and sends the immediate reply, if any. It
// reports whether the payload is one that drives a lockstep tick.
func (s *Server) handleFrame(frame []byte) bool {
	kind, payload, err := proto.ParsePayload(frame)
	if err != nil {
		s.stats.malformed.Add(1)
		return false
	}
	if reply := s.b.HandlePayload(payload); reply != nil {
		s.send(reply)
	}
	return kind == proto.KindInit || kind == proto.KindCommand
}

func (s *Server) tick() error {
	out := s.b.Tick()
	s.stats.ticks.Add(1)
	if out != nil {
		return s.send(out)
	}
	return nil
}

// send frames and writes one payload. Only a closed link is fatal; other write errors (a UDP
// tunnel with no host yet, a full socket buffer) are counted, and the first one is logged.
func (s *Server) send(payload []byte) error {
	n, err := proto.PutFrame(s.out[:], s.opts.MAC, payload)
	if err == nil {
		err = s.conn.WriteFrame(s.out[:n])
	}
	switch {
	case err == nil:
		s.stats.out.Add(1)
		return nil
	case errors.Is(err, link.ErrClosed):
		return fmt.Errorf("board server: link closed: %w", err)
	}
	if s.stats.sendErrors.Add(1) == 1 {
		s.log.Warn("board server: send failed (further failures are only counted)", "err", err)
	}
	return nil
}

// runLockstep reads, ticks and answers on one goroutine. It locks its thread only for a
// real-time priority: over an in-process pipe, hand-overs between unlocked goroutines cost no
// thread wake-up (one lockstep step: 4.5 us unlocked, 37 us locked), and over a veth pair
// locking gains nothing measurable.
func (s *Server) runLockstep(ctx context.Context) error {
	if s.opts.Priority != 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if restore := s.realtime("lockstep"); restore != nil {
			defer restore()
		}
	}
	buf := s.ring.slots[0][:]
	for ctx.Err() == nil {
		s.serveRequests()
		n, err := s.conn.ReadFrame(buf)
		switch {
		case errors.Is(err, link.ErrTimeout):
			continue
		case errors.Is(err, link.ErrShortBuffer):
			s.stats.malformed.Add(1)
			continue
		case err != nil:
			return fmt.Errorf("board server: read: %w", err)
		}
		s.stats.in.Add(1)
		if s.handleFrame(buf[:n]) {
			if err := s.tick(); err != nil {
				return err
			}
		}
	}
	return nil
}

// realtime applies the configured real-time priority to the calling (locked) thread and returns
// how to undo it, or nil when nothing was changed.
func (s *Server) realtime(thread string) func() error {
	if s.opts.Priority == 0 {
		return nil
	}
	restore, err := clock.Realtime(s.opts.Priority)
	if err != nil {
		s.log.Warn("board server: running without real-time priority", "thread", thread, "err", err)
		return nil
	}
	return restore
}

func (s *Server) serveRequests() {
	for {
		select {
		case r := <-s.do:
			r.fn(s.b)
			close(r.done)
		default:
			return
		}
	}
}

// Do runs fn on the board between two ticks (or, in lockstep, before the next frame) and waits
// for it: the way to inject faults or read the board's state while the server runs.
func (s *Server) Do(ctx context.Context, fn func(*board.Board)) error {
	r := request{fn: fn, done: make(chan struct{})}
	select {
	case s.do <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the counters so far; safe to call from any goroutine. The lateness figures are
// refreshed once per second.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Ticks: c.ticks.Load(), MissedTicks: c.missed.Load(), FramesIn: c.in.Load(), FramesOut: c.out.Load(),
		Malformed: c.malformed.Load(), Overflow: c.overflow.Load(), SendErrors: c.sendErrors.Load(),
		LatenessP50: time.Duration(c.p50.Load()), LatenessP99: time.Duration(c.p99.Load()),
		LatenessMax: time.Duration(c.max.Load()), LongestGap: time.Duration(c.longestGap.Load()),
	}
}
