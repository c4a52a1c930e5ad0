package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

var hostMAC = proto.MAC{0x02, 0, 0, 0, 0, 0x01}

// running is a server on one end of a pipe; the test plays the host on the other.
type running struct {
	host   *link.PipeEnd
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg board.Config, opts server.Options) *running {
	t.Helper()
	b := boardtest.FirstOrder(t, cfg)
	h, be := link.Pipe()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &running{host: h, srv: server.New(b, be, opts), done: make(chan error, 1)}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	go func() { r.done <- r.srv.Run(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		<-r.done
		h.Close()
		be.Close()
	})
	if err := h.SetReadTimeout(time.Second); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *running) send(t *testing.T, payload []byte) {
	t.Helper()
	var frame [proto.MaxFrameLen]byte
	n, err := proto.PutFrame(frame[:], hostMAC, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.host.WriteFrame(frame[:n]); err != nil {
		t.Fatal(err)
	}
}

// receive returns the next frame's payload and checks its source address.
func (r *running) receive(t *testing.T, from proto.MAC) []byte {
	t.Helper()
	buf := make([]byte, proto.MaxFrameLen)
	n, err := r.host.ReadFrame(buf)
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := proto.SourceMAC(buf[:n]); src != from {
		t.Fatalf("frame from %v, want %v", src, from)
	}
	_, p, err := proto.ParsePayload(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func initPayload(version, session uint16) []byte {
	var b [proto.InitLen]byte
	_ = (&proto.Init{Version: version, SessionID: session}).Marshal(b[:])
	return b[:]
}

func commandPayload(t *testing.T, session, index uint16) []byte {
	var b [proto.CommandLen]byte
	if _, err := (&proto.Command{SessionID: session, Index: index}).Marshal(b[:]); err != nil {
		t.Fatal(err)
	}
	return b[:]
}

func TestLockstep(t *testing.T) {
	mac := proto.MAC{0x02, 1, 2, 3, 4, 5}
	r := start(t, board.Config{}, server.Options{Lockstep: true, MAC: mac})
	// A v5 init gets the immediate version-mismatch ack; the tick it drives sends nothing.
	r.send(t, initPayload(5, 9))
	var ack proto.Ack
	if err := ack.Unmarshal(r.receive(t, mac)); err != nil || ack.Version != proto.Version || ack.SessionID != 9 {
		t.Fatalf("mismatch ack %+v, %v", ack, err)
	}
	// Garbage is counted and drives no tick.
	if err := r.host.WriteFrame(make([]byte, 60)); err != nil {
		t.Fatal(err)
	}
	for i := range 52 {
		r.send(t, initPayload(proto.Version, 9))
		p := r.receive(t, mac)
		if want := map[bool]int{true: proto.AckLen, false: proto.SensorLen}[i == 51]; len(p) != want {
			t.Fatalf("init %d answered with %d bytes, want %d", i+1, len(p), want)
		}
	}
	for i := range uint16(10) {
		r.send(t, commandPayload(t, 9, i))
		var s proto.Sensor
		if err := s.Unmarshal(r.receive(t, mac)); err != nil || s.LastCmdIndex != i || s.SensorIndex != i+1 {
			t.Fatalf("command %d: sensor %+v, %v", i, s, err)
		}
	}
	st := r.srv.Stats()
	if st.Ticks != 1+52+10 || st.FramesIn != 1+1+52+10 || st.FramesOut != 1+51+1+10 || st.Malformed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRealtime(t *testing.T) {
	r := start(t, board.Config{}, server.Options{})
	r.send(t, initPayload(proto.Version, 3))
	for i := range 60 {
		p := r.receive(t, server.DefaultMAC)
		if want := map[bool]int{true: proto.AckLen, false: proto.SensorLen}[i >= 51]; len(p) != want {
			t.Fatalf("frame %d: %d bytes, want %d", i+1, len(p), want)
		}
	}
	var state board.State
	var spi uint8
	if err := r.srv.Do(context.Background(), func(b *board.Board) {
		state, spi = b.State(), b.SPIConnected()
		b.SetLinkUp(false)
		time.Sleep(30 * time.Millisecond) // stalls the tick loop: the board is silent that long
	}); err != nil {
		t.Fatal(err)
	}
	if state != board.StateSendingInitAck || spi != 0x3f {
		t.Fatalf("state %v spi %#x", state, spi)
	}
	// The link is down: nothing more arrives (frames already queued drain first).
	if err := r.host.SetReadTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.host.ReadFrame(make([]byte, proto.MaxFrameLen))
		if errors.Is(err, link.ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := r.srv.Stats(); st.Ticks < 60 || st.FramesIn != 1 || st.LongestGap < 30*time.Millisecond {
		t.Fatalf("stats %+v (want at least 60 ticks, 1 frame in, a 30ms or longer gap between ticks)", st)
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	r.done <- nil // for the cleanup
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.srv.Do(ctx, func(*board.Board) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do on a stopped server: %v", err)
	}
}

func TestClosedLinkEndsRun(t *testing.T) {
	for _, lockstep := range []bool{false, true} {
		b := boardtest.FirstOrder(t, board.Config{})
		h, be := link.Pipe()
		srv := server.New(b, be, server.Options{Lockstep: lockstep})
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background()) }()
		time.Sleep(5 * time.Millisecond)
		be.Close()
		if err := <-done; !errors.Is(err, link.ErrClosed) {
			t.Fatalf("lockstep %v: Run returned %v, want ErrClosed", lockstep, err)
		}
		h.Close()
	}
}
