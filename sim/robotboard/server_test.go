package robotboard_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
)

func pipe(t testing.TB) (hostEnd, boardEnd *link.PipeEnd) {
	t.Helper()
	hostEnd, boardEnd = link.Pipe()
	t.Cleanup(func() {
		hostEnd.Close()
		boardEnd.Close()
	})
	return hostEnd, boardEnd
}

// standResult is what a host session standing the robot up saw, with the simulator's view.
type standResult struct {
	host    host.Stats
	board   robotboard.Stats
	heights heightRange
	truth   robotboard.Truth
	state   board.State
}

// standOverLink is a host program on conn: connect, stand the robot up and hold it until the
// simulated robot has run for d (simulated time equals wall time in real time). Each tick it
// reads the ground truth the server publishes.
func standOverLink(t testing.TB, srv *robotboard.Server, r *robotboard.Robot, conn link.Conn, cfg host.Config, d time.Duration) standResult {
	t.Helper()
	h := host.New(conn, cfg)
	if _, err := h.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := newStander(r.JointOffsets())
	res := standResult{heights: newHeightRange()}
	var in proto.Sensor
	cmd := st.next(nil)
	for tick := 0; ; tick++ {
		if err := h.Send(cmd); err != nil {
			t.Fatal(err)
		}
		status := srv.Status()
		if status.Truth.Time != time.Duration(status.BoardTicks)*time.Millisecond {
			t.Fatalf("torn status: truth at %v, %d board ticks", status.Truth.Time, status.BoardTicks)
		}
		res.truth = status.Truth
		if st.holding() {
			res.heights.add(res.truth.Pos[2])
		}
		if res.truth.Time >= d {
			break
		}
		if err := h.Receive(&in); err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		cmd = st.next(&in)
	}
	if !st.maxWarn.IsZero() {
		t.Errorf("gains clamped: %v", st.maxWarn)
	}
	status := srv.Status()
	res.host, res.board, res.state = h.Stats(), status.Stats, status.State
	if status.Err != nil || status.Truth.Fell {
		t.Errorf("robot: %+v", status)
	}
	return res
}

func (res *standResult) check(t testing.TB) {
	t.Helper()
	res.heights.check(t)
	h, b := res.host, res.board
	if h.CommandLoss != 0 || h.SensorLoss != 0 || h.ForeignSensors != 0 || h.Malformed != 0 || b.Malformed != 0 || b.Overflow != 0 || b.SendErrors != 0 {
		t.Errorf("lost packets: host %+v, board %+v", h, b)
	}
	if res.state != board.StateActiveControl || res.truth.Fell {
		t.Errorf("board %v, truth %+v", res.state, res.truth)
	}
}

// The same host session as on the robot, over an in-process pipe with the board ticking once per
// command: as fast as the simulation goes.
func TestLockstepOverPipe(t *testing.T) {
	r := newRobot(t, robotboard.Config{Seed: 2})
	hostEnd, boardEnd := pipe(t)
	rx, tx := perceptionLink(t)
	srv := serve(t, r, boardEnd, robotboard.ServeOptions{Lockstep: true, Perception: tx})
	// Lockstep has no deadlines: the session waits up to 2 s for a packet, not the SDK's 50 ms,
	// so that a loaded machine cannot fail the test.
	cfg := host.Config{Interface: "pipe", SensorTimeout: 2 * time.Second, Logger: quietLog()}
	res := standOverLink(t, srv, r, hostEnd, cfg, 4*time.Second)
	res.check(t)
	t.Logf("lockstep: %d commands, %d sensor packets, %d ticks; base height while holding %.4f..%.4f m; truth %+v",
		res.host.CommandsSent, res.host.SensorsReceived, res.board.Ticks, res.heights.min, res.heights.max, res.truth)
	// 50 Hz of simulated time, whatever the wall clock did.
	if want := res.board.Ticks / robotboard.DefaultPerceptionPeriod; res.board.PerceptionSent != want {
		t.Errorf("perception: %+v for %d ticks, want %d samples", res.board, res.board.Ticks, want)
	}
	waitAccepted(t, rx, 1)
	var d perception.Datagram
	if st := rx.Latest(time.Now(), &d); !st.Valid {
		t.Fatal("no perception")
	}
	checkHeights(t, &d, nil)
}

// The perception stream of a robot served in real time: datagrams at 50 Hz of simulated time
// arrive over UDP, decode, and show a known box.
func TestPerceptionStream(t *testing.T) {
	r := newRobot(t, robotboard.Config{Scenario: boxWorld(t)})
	_, boardEnd := pipe(t)
	rx, tx := perceptionLink(t)
	srv := serve(t, r, boardEnd, robotboard.ServeOptions{Perception: tx, PerceptionPeriod: 10})
	const samples = 10
	waitAccepted(t, rx, samples)
	var d perception.Datagram
	st := rx.Latest(time.Now(), &d)
	if !st.Valid || st.Stale {
		t.Fatalf("status %+v", st)
	}
	if onBox := checkHeights(t, &d, r.Layout()); onBox < 5 {
		t.Fatalf("only %d points on the box", onBox)
	}
	if d.Stamp != time.Duration(d.Seq)*10*time.Millisecond {
		t.Fatalf("sample %d stamped %v, want every 10 ms of simulated time", d.Seq, d.Stamp)
	}
	status := srv.Status()
	rs := rx.Stats()
	t.Logf("perception %+v; server %+v", rs, status)
	if rs.Lost != 0 || rs.OutOfOrder != 0 || rs.Datagrams != rs.Accepted || status.PerceptionErrors != 0 {
		t.Fatalf("perception %+v, server %+v", rs, status.Stats)
	}
	if status.State != board.StateWaitingForInit || status.BoardTicks < samples*10 || status.Truth.Time != time.Duration(status.BoardTicks)*time.Millisecond {
		t.Fatalf("without a host: %+v", status)
	}
	if allocs := testing.AllocsPerRun(100, func() { srv.Status() }); allocs != 0 {
		t.Fatalf("Status: %v allocations", allocs)
	}
}

func TestServeOnce(t *testing.T) {
	r := newRobot(t, robotboard.Config{})
	_, boardEnd := pipe(t)
	if _, err := r.Serve(boardEnd, robotboard.ServeOptions{PerceptionPeriod: -1}); err == nil {
		t.Fatal("negative perception period accepted")
	}
	serve(t, r, boardEnd, robotboard.ServeOptions{Lockstep: true})
	if _, err := r.Serve(boardEnd, robotboard.ServeOptions{}); err == nil {
		t.Fatal("a second server for a served robot")
	}
}

// What a served robot does after every tick (publishing its status, and a perception sample sent
// every period, here every tick) allocates nothing.
func TestServedTickAllocatesNothing(t *testing.T) {
	r := newRobot(t, robotboard.Config{Scenario: boxWorld(t)})
	_, boardEnd := pipe(t)
	rx, tx := perceptionLink(t)
	srv, err := r.Serve(boardEnd, robotboard.ServeOptions{Perception: tx, PerceptionPeriod: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Not running: the test ticks the board itself, on this goroutine.
	if allocs := testing.AllocsPerRun(200, func() { r.Step(nil) }); allocs != 0 {
		t.Fatalf("%v allocations per served tick", allocs)
	}
	if st := srv.Status(); st.PerceptionSent != 201 || st.BoardTicks != 201 {
		t.Fatalf("status %+v", st)
	}
	waitAccepted(t, rx, 1)
}

// A served robot's status says whether the base has been within the world's goal radius at any
// tick so far: from the first tick when the goal is at the start, and still after the robot has
// been moved away from it; only once it has been moved onto the goal when the goal is 2 m ahead;
// never in a world without a goal.
func TestGoalReached(t *testing.T) {
	for _, tc := range []struct {
		world         string
		before, after bool // reached before and after the robot is moved to x = 2 m
	}{
		{"name: goal_here\ngoal: {x: 0.1, y: 0, radius: 0.25}\n", true, true},
		{"name: goal_ahead\ngoal: {x: 2, y: 0, radius: 0.25}\n", false, true},
		{"name: no_goal\n", false, false},
	} {
		s, err := worlds.Parse([]byte(tc.world))
		if err != nil {
			t.Fatal(err)
		}
		r := newRobot(t, robotboard.Config{Scenario: s})
		_, boardEnd := pipe(t)
		srv, err := r.Serve(boardEnd, robotboard.ServeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		step := func() {
			for range 10 {
				r.Step(nil)
			}
		}
		step()
		if got := srv.Status().GoalReached; got != tc.before {
			t.Errorf("%s: goal reached %v at the start, want %v", s.Name, got, tc.before)
		}
		pose := r.Sim().StartPose()
		pose.Pos[0] = 2
		if err := r.Sim().Reset(pose); err != nil {
			t.Fatal(err)
		}
		step()
		if st := srv.Status(); st.GoalReached != tc.after || math.Abs(st.Truth.Pos[0]-2) > 0.05 {
			t.Errorf("%s: goal reached %v with the base at %.2f m, want %v at 2 m", s.Name, st.GoalReached, st.Truth.Pos[0], tc.after)
		}
	}
}
