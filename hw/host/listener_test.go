package host_test

import (
	"context"
	"encoding/binary"
	"testing"
	"testing/synctest"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// feed runs an emulated board in the test's goroutine, as the controlling program would see it,
// and writes what it sends into a pipe to a listener, which reads each sensor packet at once.
type feed struct {
	t        *testing.T
	b        *board.Board
	end      *link.PipeEnd
	l        *host.Session
	lost     func(payload []byte) bool // frames the listener never gets
	frame    [proto.MaxFrameLen]byte
	written  int // sensor packets written to the listener
	listened bool
}

func newFeed(t *testing.T, lost func([]byte) bool) *feed {
	listenEnd, boardEnd := link.Pipe()
	t.Cleanup(func() { listenEnd.Close(); boardEnd.Close() })
	log, _ := newLogger()
	l := host.New(listenEnd, host.Config{Interface: "pipe", Logger: log})
	return &feed{t: t, b: boardtest.FirstOrder(t, board.Config{}), end: boardEnd, l: l, lost: lost}
}

// tick hands the board payload (if any), runs one tick and passes on what the board sends.
func (f *feed) tick(payload []byte) {
	f.t.Helper()
	if payload != nil {
		f.b.HandlePayload(payload)
	}
	out := f.b.Tick()
	if out == nil || f.lost(out) {
		return
	}
	n, err := proto.PutFrame(f.frame[:], server.DefaultMAC, out)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.end.WriteFrame(f.frame[:n]); err != nil {
		f.t.Fatal(err)
	}
	if len(out) != proto.SensorLen {
		return
	}
	f.written++
	if !f.listened {
		f.listened = true
		if err := f.l.Listen(context.Background()); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	var in proto.Sensor
	if err := f.l.Receive(&in); err != nil {
		f.t.Fatalf("listener: %v", err)
	}
}

// session inits id, sends commands indices first.., skipping one index after the fifth (one
// command lost), then falls silent until the board's watchdog puts it in ERROR, and 30 ticks more.
func (f *feed) session(id uint16, first uint16, commands int) {
	var init [proto.InitLen]byte
	_ = (&proto.Init{Version: proto.Version, SessionID: id}).Marshal(init[:])
	f.tick(init[:])
	for tick := 0; f.b.State() != board.StateSendingInitAck; tick++ {
		if tick == 100 {
			f.t.Fatalf("session %d: board in %v 100 ticks after the init", id, f.b.State())
		}
		f.tick(nil)
	}
	cmd := proto.Command{SessionID: id, Index: first}
	var payload [proto.CommandLen]byte
	for i := range commands {
		if i == 5 {
			cmd.Index++
		}
		if _, err := cmd.Marshal(payload[:]); err != nil {
			f.t.Fatal(err)
		}
		f.tick(payload[:])
		cmd.Index++
	}
	for tick := 0; f.b.State() != board.StateError; tick++ {
		if tick == 100 {
			f.t.Fatalf("session %d: board in %v 100 ticks after the last command", id, f.b.State())
		}
		f.tick(nil)
	}
	for range 30 {
		f.tick(nil)
	}
}

// TestListenerFollowsSessions: a listener follows four sessions of one board, a new id, the same
// id again (only the acks tell it that the board restarted its counters) and id 0, and its loss
// statistics hold exactly what it lost: the restarts of sensor_index and packet_loss are not loss.
func TestListenerFollowsSessions(t *testing.T) {
	sessionOf := func(p []byte) uint16 { return binary.LittleEndian.Uint16(p) }
	indexOf := func(p []byte) uint16 { return binary.LittleEndian.Uint16(p[202:]) }
	for _, tc := range []struct {
		name         string
		lost         func(p []byte) bool
		sensorLoss   uint64
		sensorBursts map[int]uint64
	}{
		{"nothing lost", func([]byte) bool { return false }, 0, nil},
		{"sensor packets lost within sessions", func(p []byte) bool {
			return len(p) == proto.SensorLen && (sessionOf(p) == 1 && indexOf(p) >= 40 && indexOf(p) < 43 ||
				sessionOf(p) == 0 && indexOf(p) == 100)
		}, 3 + 1, map[int]uint64{3: 1, 1: 1}},
	} {
		// In a bubble the clock stands still while the listener reads, so a busy machine cannot
		// make it time out.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFeed(t, tc.lost)
				for _, s := range []struct {
					id    uint16
					first uint16
				}{{1, 0}, {2, 60000}, {2, 7}, {0, 0}} {
					f.session(s.id, s.first, 300)
				}
				st := f.l.Stats()
				if st.SessionID != 0 || f.l.SessionID() != 0 {
					t.Fatalf("listener on session %d, want the last one, 0", st.SessionID)
				}
				// Listen consumes the first packet without counting it.
				if st.SensorsReceived != uint64(f.written-1) {
					t.Fatalf("received %d sensor packets, want %d", st.SensorsReceived, f.written-1)
				}
				if st.SensorLoss != tc.sensorLoss || st.CommandLoss != 4 {
					t.Fatalf("sensor loss %d, command loss %d; want %d and 4 (one skipped command per session)",
						st.SensorLoss, st.CommandLoss, tc.sensorLoss)
				}
				for k := 1; k <= host.BurstBuckets; k++ {
					if st.SensorLossBursts[k-1] != tc.sensorBursts[k] {
						t.Fatalf("sensor bursts %v, want %v", st.SensorLossBursts, tc.sensorBursts)
					}
					if want := map[bool]uint64{true: 4}[k == 1]; st.CommandLossBursts[k-1] != want {
						t.Fatalf("command bursts %v, want four of one", st.CommandLossBursts)
					}
				}
			})
		})
	}
}
