package link_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// TestConnSemantics runs the same table on every transport: the Conn contract does not depend on
// what carries the frames.
func TestConnSemantics(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, p linkPair)
	}{
		{"frames arrive whole and in order, both ways", testRoundTrip},
		{"read times out with ErrTimeout", testTimeout},
		{"a nanosecond timeout still times out", testTinyTimeout},
		{"close wakes a blocked read", testCloseWhileBlocked},
		{"every call after close is ErrClosed", testAfterClose},
		{"oversize frame into small buffer", testShortBuffer},
		{"write refuses non-Ethernet lengths", testBadWriteLength},
		{"negative timeout refused", testNegativeTimeout},
		{"no allocation per frame", testNoAllocs},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, tr.open(t)) })
			}
		})
	}
}

func testRoundTrip(t *testing.T, p linkPair) {
	setTimeout(t, time.Second, p.host, p.board)
	sent := [][]byte{
		frame(t, p.hostMAC, proto.InitLen, 1),
		frame(t, p.hostMAC, proto.CommandLen, 2),
		frame(t, p.hostMAC, proto.CommandLen, 3),
	}
	for _, f := range sent {
		if err := p.host.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, proto.MaxFrameLen)
	for i, want := range sent {
		n, err := p.board.ReadFrame(buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("frame %d: board read %x, host sent %x", i, buf[:n], want)
		}
	}
	reply := frame(t, p.boardMAC, proto.SensorLen, 4)
	if err := p.board.WriteFrame(reply); err != nil {
		t.Fatal(err)
	}
	n, err := p.host.ReadFrame(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:n], reply) {
		t.Fatalf("host read %x, board sent %x", buf[:n], reply)
	}
}

func testTimeout(t *testing.T, p linkPair) {
	const timeout = 30 * time.Millisecond
	setTimeout(t, timeout, p.host)
	start := time.Now()
	n, err := p.host.ReadFrame(make([]byte, proto.MaxFrameLen))
	if err != link.ErrTimeout || n != 0 {
		t.Fatalf("ReadFrame = %d, %v; want 0, ErrTimeout", n, err)
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Errorf("timed out after %v, before the %v timeout", elapsed, timeout)
	}
	// A timeout loses nothing: the link still works.
	setTimeout(t, time.Second, p.host)
	f := frame(t, p.boardMAC, proto.AckLen, 9)
	if err := p.host.WriteFrame(frame(t, p.hostMAC, proto.InitLen, 0)); err != nil {
		t.Fatal(err) // UDP: the board side learns whom to answer
	}
	setTimeout(t, time.Second, p.board)
	if _, err := p.board.ReadFrame(make([]byte, proto.MaxFrameLen)); err != nil {
		t.Fatal(err)
	}
	if err := p.board.WriteFrame(f); err != nil {
		t.Fatal(err)
	}
	if _, err := p.host.ReadFrame(make([]byte, proto.MaxFrameLen)); err != nil {
		t.Fatalf("read after a timeout: %v", err)
	}
}

func testTinyTimeout(t *testing.T, p linkPair) {
	setTimeout(t, time.Nanosecond, p.host)
	done := make(chan error, 1)
	go func() {
		_, err := p.host.ReadFrame(make([]byte, proto.MaxFrameLen))
		done <- err
	}()
	select {
	case err := <-done:
		if err != link.ErrTimeout {
			t.Fatalf("ReadFrame: %v, want ErrTimeout", err)
		}
	case <-time.After(5 * time.Second):
		p.host.Close()
		t.Fatal("a 1ns read timeout never expired")
	}
}

func testCloseWhileBlocked(t *testing.T, p linkPair) {
	setTimeout(t, 0, p.host) // wait forever: only Close can end the read
	done := make(chan error, 1)
	go func() {
		_, err := p.host.ReadFrame(make([]byte, proto.MaxFrameLen))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read block
	if err := p.host.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != link.ErrClosed {
			t.Fatalf("blocked ReadFrame returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the blocked ReadFrame")
	}
}

func testAfterClose(t *testing.T, p linkPair) {
	if err := p.host.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.host.ReadFrame(make([]byte, proto.MaxFrameLen)); err != link.ErrClosed {
		t.Errorf("ReadFrame: %v", err)
	}
	if err := p.host.WriteFrame(frame(t, p.hostMAC, proto.InitLen, 0)); err != link.ErrClosed {
		t.Errorf("WriteFrame: %v", err)
	}
	if err := p.host.SetReadTimeout(time.Second); err != link.ErrClosed {
		t.Errorf("SetReadTimeout: %v", err)
	}
	if err := p.host.Close(); err != link.ErrClosed {
		t.Errorf("second Close: %v", err)
	}
}

func testShortBuffer(t *testing.T, p linkPair) {
	setTimeout(t, time.Second, p.host, p.board)
	if err := p.host.WriteFrame(frame(t, p.hostMAC, proto.InitLen, 0)); err != nil {
		t.Fatal(err) // UDP: the board side learns whom to answer
	}
	if _, err := p.board.ReadFrame(make([]byte, proto.MaxFrameLen)); err != nil {
		t.Fatal(err)
	}
	big, next := frame(t, p.boardMAC, proto.SensorLen, 1), frame(t, p.boardMAC, proto.AckLen, 2)
	for _, f := range [][]byte{big, next} {
		if err := p.board.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	_, err := p.host.ReadFrame(make([]byte, proto.MinFrameLen))
	if !errors.Is(err, link.ErrShortBuffer) {
		t.Fatalf("ReadFrame into a %d-byte buffer: %v, want ErrShortBuffer", proto.MinFrameLen, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "224-byte frame") || !strings.Contains(msg, "64-byte buffer") {
		t.Errorf("error %q does not give both sizes", msg)
	}
	buf := make([]byte, proto.MaxFrameLen)
	n, err := p.host.ReadFrame(buf)
	if err != nil || !bytes.Equal(buf[:n], next) {
		t.Fatalf("frame after the oversize one: %x, %v; want %x", buf[:n], err, next)
	}
}

func testBadWriteLength(t *testing.T, p linkPair) {
	for _, n := range []int{0, 13, 1515} {
		if err := p.host.WriteFrame(make([]byte, n)); !errors.Is(err, link.ErrFrameLength) {
			t.Errorf("WriteFrame of %d bytes: %v, want ErrFrameLength", n, err)
		}
	}
}

func testNegativeTimeout(t *testing.T, p linkPair) {
	if err := p.host.SetReadTimeout(-time.Millisecond); err == nil {
		t.Error("SetReadTimeout(-1ms) accepted")
	}
}

func testNoAllocs(t *testing.T, p linkPair) {
	setTimeout(t, time.Second, p.host, p.board)
	cmd, sensor := frame(t, p.hostMAC, proto.CommandLen, 1), frame(t, p.boardMAC, proto.SensorLen, 2)
	buf := make([]byte, proto.MaxFrameLen)
	var err error
	exchange := func() {
		if err == nil {
			err = p.host.WriteFrame(cmd)
		}
		if err == nil {
			_, err = p.board.ReadFrame(buf)
		}
		if err == nil {
			err = p.board.WriteFrame(sensor)
		}
		if err == nil {
			_, err = p.host.ReadFrame(buf)
		}
	}
	exchange() // warm up: the UDP board side learns its peer
	allocs := testing.AllocsPerRun(200, exchange)
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per command/sensor exchange, want 0", allocs)
	}
}

func setTimeout(t testing.TB, d time.Duration, conns ...link.Conn) {
	t.Helper()
	for _, c := range conns {
		if err := c.SetReadTimeout(d); err != nil {
			t.Fatal(err)
		}
	}
}
