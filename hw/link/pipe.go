package link

import (
	"sync"
	"sync/atomic"
	"time"
)

// pipeDepth is how many frames a PipeEnd buffers for its reader, like a socket's receive buffer.
const pipeDepth = 32

// PipeEnd is one end of an in-process frame pipe made by Pipe. Frames are copied on write, so the
// caller may reuse its buffer at once. Like a real link, a write never blocks: when the reader has
// pipeDepth frames waiting, further frames are dropped and counted (see Dropped). Closing one end
// does not close the other; the peer's reads just time out, as across a cable.
type PipeEnd struct {
	in, out *frameQueue // in: frames for us to read; out: the peer's in

	readMu  sync.Mutex // one reader at a time: the timer is shared
	timer   *time.Timer
	timeout atomic.Int64 // time.Duration

	closeOnce sync.Once
	closed    chan struct{}
}

type frameQueue struct {
	free    chan []byte // empty slots, each maxFrameLen long
	full    chan []byte // slots holding one frame each, in order
	dropped atomic.Uint64
}

func newFrameQueue() *frameQueue {
	q := &frameQueue{
		free: make(chan []byte, pipeDepth),
		full: make(chan []byte, pipeDepth),
	}
	for range pipeDepth {
		q.free <- make([]byte, maxFrameLen)
	}
	return q
}

// Pipe returns the two connected ends of an in-process link: what a writes, b reads, and back.
func Pipe() (a, b *PipeEnd) {
	ab, ba := newFrameQueue(), newFrameQueue()
	return newPipeEnd(ba, ab), newPipeEnd(ab, ba)
}

func newPipeEnd(in, out *frameQueue) *PipeEnd {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &PipeEnd{in: in, out: out, timer: t, closed: make(chan struct{})}
}

// WriteFrame copies frame into the peer's queue, or drops it when that queue is full.
func (p *PipeEnd) WriteFrame(frame []byte) error {
	if p.isClosed() {
		return ErrClosed
	}
	if err := checkFrameLength(frame); err != nil {
		return err
	}
	select {
	case slot := <-p.out.free:
		p.out.full <- slot[:copy(slot[:cap(slot)], frame)]
	default:
		p.out.dropped.Add(1)
	}
	return nil
}

// ReadFrame copies the oldest waiting frame into buf.
func (p *PipeEnd) ReadFrame(buf []byte) (int, error) {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	if p.isClosed() {
		return 0, ErrClosed
	}
	var expired <-chan time.Time // nil: wait forever
	if d := time.Duration(p.timeout.Load()); d > 0 {
		p.timer.Reset(d)
		defer p.timer.Stop()
		expired = p.timer.C
	}
	select {
	case slot := <-p.in.full:
		n := len(slot)
		copy(buf, slot)
		p.in.free <- slot[:cap(slot)]
		if n > len(buf) {
			return 0, shortBufferError(n, len(buf))
		}
		return n, nil
	case <-expired:
		return 0, ErrTimeout
	case <-p.closed:
		return 0, ErrClosed
	}
}

// SetReadTimeout sets how long ReadFrame waits for a frame; zero waits forever.
func (p *PipeEnd) SetReadTimeout(d time.Duration) error {
	if p.isClosed() {
		return ErrClosed
	}
	if err := checkTimeout(d); err != nil {
		return err
	}
	p.timeout.Store(int64(d))
	return nil
}

// Close wakes a blocked ReadFrame, which returns ErrClosed, as does every later call.
func (p *PipeEnd) Close() error {
	err := ErrClosed
	p.closeOnce.Do(func() {
		close(p.closed)
		err = nil
	})
	return err
}

// Dropped counts the frames this end wrote that were lost because the peer's queue was full.
func (p *PipeEnd) Dropped() uint64 { return p.out.dropped.Load() }

func (p *PipeEnd) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}
