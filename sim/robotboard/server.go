package robotboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/proto"
)

// DefaultPerceptionPeriod is the perception stream's period in ticks: 50 Hz.
const DefaultPerceptionPeriod = 20

// ServeOptions configure a Server. The zero value serves in real time without perception.
type ServeOptions struct {
	// Lockstep ticks once per received init or command instead of on the 1 kHz wall clock.
	Lockstep bool
	MAC      proto.MAC // source address of the board's frames (zero: server.DefaultMAC)
	// Priority, when 1..99, runs the tick and reader threads with SCHED_FIFO at that priority.
	Priority int
	// Perception, when not nil, receives a perception sample every PerceptionPeriod ticks
	// (0: DefaultPerceptionPeriod) of simulated time. The caller keeps ownership of it.
	Perception       *perception.Sender
	PerceptionPeriod int
	Logger           *slog.Logger // nil: slog.Default()
}

// Server runs a Robot on a link. Create it with Robot.Serve and call Run once.
type Server struct {
	robot  *Robot
	srv    *server.Server
	sender *perception.Sender
	log    *slog.Logger

	// Owned by the tick thread: the countdown to the next sample and the sample itself.
	period, countdown int
	sample            perception.Datagram

	sent, sendErrors atomic.Uint64
	last             tickCell
	plantErr         atomic.Pointer[error]
	goalReached      atomic.Bool
}

// Stats counts what a Server did: the board server's counters plus the perception stream's.
type Stats struct {
	server.Stats
	PerceptionSent   uint64 // datagrams sent
	PerceptionErrors uint64 // datagrams the socket refused (the first is logged)
}

// Status is the running robot as of its last tick, with the counters.
type Status struct {
	Stats
	State      board.State
	BoardTicks uint64 // board ticks since power-on: simulated milliseconds
	Truth      Truth
	Err        error // what froze the physics, if anything
	// GoalReached: at some tick so far the base was within the world's goal radius (what
	// evaluation counts as reaching the goal); false in a world without a goal.
	GoalReached bool
}

// Serve prepares a Server for r on conn. The Server owns r from Run until Run returns: reach it
// meanwhile only through Do. A Robot can be served by one Server at a time.
func (r *Robot) Serve(conn link.Conn, opts ServeOptions) (*Server, error) {
	if opts.PerceptionPeriod < 0 {
		return nil, fmt.Errorf("robotboard: perception period of %d ticks", opts.PerceptionPeriod)
	}
	if opts.PerceptionPeriod == 0 {
		opts.PerceptionPeriod = DefaultPerceptionPeriod
	}
	if r.served {
		return nil, errors.New("robotboard: the robot is already served")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		robot: r, sender: opts.Perception, log: log,
		period: opts.PerceptionPeriod, countdown: opts.PerceptionPeriod,
	}
	s.srv = server.New(r.board, conn, server.Options{MAC: opts.MAC, Lockstep: opts.Lockstep, Priority: opts.Priority, Logger: log})
	r.served = true
	r.plant.afterStep = s.afterStep
	s.publish()
	return s, nil
}

// afterStep runs on the tick thread after every tick's physics: it publishes the robot's status
// for Status and, every period, takes a perception sample and sends it. The send is one UDP
// sendto on the tick's own thread, like the board's frames: handing samples to another
// goroutine would wake it from the tick thread, and the Go scheduler could then make the tick
// wait for an ordinary-priority thread.
func (s *Server) afterStep() {
	s.publish()
	if s.sender == nil {
		return
	}
	s.countdown--
	if s.countdown > 0 {
		return
	}
	s.countdown = s.period
	s.robot.Perceive(&s.sample)
	if err := s.sender.Send(&s.sample); err != nil {
		if s.sendErrors.Add(1) == 1 {
			s.log.Warn("perception: send failed (further failures are only counted)", "err", err)
		}
		return
	}
	s.sent.Add(1)
}

func (s *Server) publish() {
	r := s.robot
	truth := r.Truth()
	s.last.store(truth, r.board.State(), r.board.Ticks())
	if l := r.layout; l != nil && l.Goal != nil && !s.goalReached.Load() &&
		math.Hypot(truth.Pos[0]-l.Goal.X, truth.Pos[1]-l.Goal.Y) <= l.Goal.Radius {
		s.goalReached.Store(true)
	}
	if err := r.Err(); err != nil && s.plantErr.Load() == nil {
		latched := err // only a failure allocates
		s.plantErr.Store(&latched)
	}
}

// Run serves until ctx is done (returning nil) or the link fails.
func (s *Server) Run(ctx context.Context) error {
	defer func() { s.robot.served, s.robot.plant.afterStep = false, nil }()
	return s.srv.Run(ctx)
}

// Do runs fn on the robot between two ticks (in lockstep, before the next frame) and waits for
// it: the way to inject board faults or read more than Status while the server runs. It wakes
// the caller from the tick thread: a real-time control loop should read Status instead.
func (s *Server) Do(ctx context.Context, fn func(*Robot)) error {
	return s.srv.Do(ctx, func(*board.Board) { fn(s.robot) })
}

// Stats returns the counters so far; safe to call from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Stats:          s.srv.Stats(),
		PerceptionSent: s.sent.Load(), PerceptionErrors: s.sendErrors.Load(),
	}
}

// Status returns the robot's state as of its last tick, from any goroutine, without blocking the
// tick or being blocked by it, and without allocating.
func (s *Server) Status() Status {
	st := Status{Stats: s.Stats()}
	st.Truth, st.State, st.BoardTicks = s.last.load()
	st.GoalReached = s.goalReached.Load()
	if err := s.plantErr.Load(); err != nil {
		st.Err = *err
	}
	return st
}

// tickCell holds the last tick's truth, board state and tick count for readers on other
// goroutines. The tick thread fills the slot not published, under a sequence lock (version odd
// while it writes), then publishes it: a reader never waits for the tick thread, even one the
// scheduler paused mid-write; it only retries when the writer lapped it. Every word is atomic so
// that a reader racing the writer stays well-defined.
type tickCell struct {
	slots [2]struct {
		version atomic.Uint64
		words   [tickWords]atomic.Uint64
	}
	published atomic.Uint32
}

const tickWords = 12

func (c *tickCell) store(t Truth, state board.State, ticks uint64) {
	var fell uint64
	if t.Fell {
		fell = 1
	}
	w := [tickWords]uint64{
		uint64(t.Time), f64(t.Pos[0]), f64(t.Pos[1]), f64(t.Pos[2]),
		f64(t.LinVel[0]), f64(t.LinVel[1]), f64(t.LinVel[2]), f64(t.Yaw), f64(t.Tilt),
		fell, uint64(state), ticks,
	}
	next := (c.published.Load() + 1) & 1
	s := &c.slots[next]
	s.version.Add(1)
	for i := range w {
		s.words[i].Store(w[i])
	}
	s.version.Add(1)
	c.published.Store(next)
}

func (c *tickCell) load() (t Truth, state board.State, ticks uint64) {
	var w [tickWords]uint64
	for {
		s := &c.slots[c.published.Load()]
		v := s.version.Load()
		if v&1 != 0 {
			continue // overwritten since published: the other slot is newer
		}
		for i := range w {
			w[i] = s.words[i].Load()
		}
		if s.version.Load() == v {
			break
		}
	}
	f := math.Float64frombits
	t = Truth{
		Time: time.Duration(w[0]), Pos: [3]float64{f(w[1]), f(w[2]), f(w[3])},
		LinVel: [3]float64{f(w[4]), f(w[5]), f(w[6])}, Yaw: f(w[7]), Tilt: f(w[8]), Fell: w[9] != 0,
	}
	return t, board.State(w[10]), w[11]
}

func f64(v float64) uint64 { return math.Float64bits(v) }
