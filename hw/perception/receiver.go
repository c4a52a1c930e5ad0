package perception

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// DefaultStaleAfter is how old the newest datagram may be before Latest calls it stale: five
// periods of a 50 Hz stream.
const DefaultStaleAfter = 100 * time.Millisecond

// ReorderWindow is how far behind the newest accepted sequence number a datagram may be and
// still count as merely out of order (dropped). One further behind means the sender restarted
// its sequence: it is accepted and the sequence followed from there. A sender restarting within
// this many datagrams of its previous start is ignored until it passes its old sequence.
const ReorderWindow = 64

// ReceiverOptions configure a Receiver. The zero value is ready.
type ReceiverOptions struct {
	StaleAfter time.Duration // 0: DefaultStaleAfter
	Logger     *slog.Logger  // nil: slog.Default()
}

// Status describes what Latest copied out.
type Status struct {
	Valid bool          // a datagram has been accepted (otherwise dst was left alone)
	Age   time.Duration // from the newest datagram's arrival to the time given to Latest
	Stale bool          // no datagram, or Age above the receiver's StaleAfter
}

// Stats counts what a Receiver saw. Every datagram read is counted once in Accepted,
// OutOfOrder or one of the Invalid counters.
type Stats struct {
	Datagrams  uint64 // datagrams read from the socket
	Accepted   uint64 // valid and newer than the newest before
	Lost       uint64 // sequence numbers skipped between accepted datagrams
	OutOfOrder uint64 // valid but not newer (duplicates included): dropped
	Restarts   uint64 // sequence restarts followed
	// Invalid datagrams, by reason (see the sentinels).
	Short, Long, BadMagic, BadVersion, NonFinite uint64
}

// Receiver receives datagrams on a UDP socket and keeps the newest valid one. Latest, Stats and
// Close are safe for concurrent use.
type Receiver struct {
	pc         *net.UDPConn
	staleAfter time.Duration
	log        *slog.Logger
	epoch      time.Time // arrival times are stored as monotonic offsets from here
	done       chan struct{}
	readErr    error // why the reader stopped; written before done is closed
	closing    atomic.Bool

	// The newest accepted datagram, in one of two slots written alternately by the reader
	// goroutine; published names the complete one (-1 before the first). See slot.
	slots     [2]slot
	published atomic.Int32

	datagrams, accepted, lost, outOfOrder, restarts atomic.Uint64
	short, long, magic, badVersion, nonFinite       atomic.Uint64
}

// Listen opens a Receiver on the UDP address addr ("127.0.0.1:0" picks a free port; see Addr).
func Listen(addr string, opts ReceiverOptions) (*Receiver, error) {
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("perception: listen address %q: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("perception: listen on %q: %w", addr, err)
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Receiver{pc: pc, staleAfter: opts.StaleAfter, log: opts.Logger, epoch: time.Now(), done: make(chan struct{})}
	r.published.Store(-1)
	go r.run()
	return r, nil
}

// Addr is the local address, e.g. the port Listen picked.
func (r *Receiver) Addr() netip.AddrPort { return r.pc.LocalAddr().(*net.UDPAddr).AddrPort() }

func (r *Receiver) run() {
	defer close(r.done)
	// One byte more than a datagram: a longer one is truncated to Size+1 and so recognised.
	var buf [Size + 1]byte
	var in ingest
	for {
		n, err := r.pc.Read(buf[:])
		if err != nil {
			if !r.closing.Load() {
				r.readErr = fmt.Errorf("perception: receive: %w", err)
				r.log.Warn("perception receiver stopped", "err", err)
			}
			return
		}
		in.datagram(r, buf[:n], time.Since(r.epoch))
		r.datagrams.Add(1) // last, so that whoever sees it grow sees the datagram's effects
	}
}

// ingest is the reader goroutine's own state.
type ingest struct {
	d      Datagram
	fe     FormatError
	have   bool
	last   uint64 // newest accepted sequence number
	logged bool   // an invalid datagram has been logged
}

// datagram handles one datagram that arrived at the given offset from the epoch.
func (in *ingest) datagram(r *Receiver, p []byte, at time.Duration) {
	if !in.d.decode(p, &in.fe) {
		r.countInvalid(in.fe.Err)
		if !in.logged {
			in.logged = true
			r.log.Warn("perception: invalid datagram (further ones are only counted)", "err", &in.fe)
		}
		return
	}
	seq := in.d.Seq
	switch {
	case !in.have || seq > in.last:
		if in.have {
			r.lost.Add(seq - in.last - 1)
		}
	case in.last-seq <= ReorderWindow:
		r.outOfOrder.Add(1)
		return
	default:
		r.restarts.Add(1)
		r.log.Info("perception sender restarted its sequence", "previous", in.last, "now", seq)
	}
	in.have, in.last = true, seq
	r.accepted.Add(1)
	r.publish(&in.d, at)
}

func (r *Receiver) countInvalid(reason error) {
	switch reason {
	case ErrShort:
		r.short.Add(1)
	case ErrLong:
		r.long.Add(1)
	case ErrMagic:
		r.magic.Add(1)
	case ErrVersion:
		r.badVersion.Add(1)
	case ErrNonFinite:
		r.nonFinite.Add(1)
	}
}

// slot holds one datagram and its arrival time under a sequence lock: version is odd while the
// writer fills it. Every word is atomic so that a reader racing the writer stays well-defined.
type slot struct {
	version  atomic.Uint64
	seq      atomic.Uint64
	stamp    atomic.Int64
	position [3]atomic.Uint64 // math.Float64bits
	yaw      atomic.Uint64
	heights  [GridPoints]atomic.Uint32 // math.Float32bits
	arrived  atomic.Int64              // ns after epoch
}

// publish writes the slot that is not published, then publishes it. A reader of the published
// slot is thus never waiting on a writer that the scheduler paused mid-write (a real-time control
// loop must not wait on an ordinary goroutine); only a writer two datagrams ahead of a reader can
// overwrite what it reads, and the reader then takes the newer slot.
func (r *Receiver) publish(d *Datagram, at time.Duration) {
	next := (r.published.Load() + 1) & 1
	s := &r.slots[next]
	s.version.Add(1)
	s.seq.Store(d.Seq)
	s.stamp.Store(int64(d.Stamp))
	for k, v := range d.Position {
		s.position[k].Store(math.Float64bits(v))
	}
	s.yaw.Store(math.Float64bits(d.Yaw))
	for i, h := range d.Heights {
		s.heights[i].Store(math.Float32bits(h))
	}
	s.arrived.Store(int64(at))
	s.version.Add(1)
	r.published.Store(next)
}

// Latest copies the newest accepted datagram into dst and says how old it is at now. Before the
// first datagram dst is left alone and the status is invalid and stale. It neither locks nor
// allocates, and never waits for the receiving goroutine.
func (r *Receiver) Latest(now time.Time, dst *Datagram) Status {
	for {
		p := r.published.Load()
		if p < 0 {
			return Status{Stale: true}
		}
		s := &r.slots[p]
		v := s.version.Load()
		if v&1 != 0 {
			continue // overwritten since published: the other slot is newer
		}
		d := Datagram{
			Seq:   s.seq.Load(),
			Stamp: time.Duration(s.stamp.Load()),
			Yaw:   math.Float64frombits(s.yaw.Load()),
		}
		for k := range d.Position {
			d.Position[k] = math.Float64frombits(s.position[k].Load())
		}
		for i := range d.Heights {
			d.Heights[i] = math.Float32frombits(s.heights[i].Load())
		}
		arrived := time.Duration(s.arrived.Load())
		if s.version.Load() != v {
			continue
		}
		*dst = d
		age := max(now.Sub(r.epoch)-arrived, 0)
		return Status{Valid: true, Age: age, Stale: age > r.staleAfter}
	}
}

// Stats returns the counters so far, without allocating.
func (r *Receiver) Stats() Stats {
	return Stats{
		Datagrams: r.datagrams.Load(), Accepted: r.accepted.Load(), Lost: r.lost.Load(),
		OutOfOrder: r.outOfOrder.Load(), Restarts: r.restarts.Load(),
		Short: r.short.Load(), Long: r.long.Load(), BadMagic: r.magic.Load(),
		BadVersion: r.badVersion.Load(), NonFinite: r.nonFinite.Load(),
	}
}

// Close stops the reader and closes the socket. It returns why the reader had stopped on its
// own, if it had.
func (r *Receiver) Close() error {
	r.closing.Store(true)
	err := r.pc.Close()
	<-r.done
	if r.readErr != nil {
		return r.readErr
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("perception: close: %w", err)
	}
	return nil
}
