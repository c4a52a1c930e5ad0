package link_test

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

func TestPipeTimerLogic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := link.Pipe()
		defer a.Close()
		defer b.Close()
		buf := make([]byte, proto.MaxFrameLen)
		setTimeout(t, 5*time.Millisecond, a)

		start := time.Now()
		if _, err := a.ReadFrame(buf); err != link.ErrTimeout {
			t.Fatalf("ReadFrame: %v, want ErrTimeout", err)
		}
		if got := time.Since(start); got != 5*time.Millisecond {
			t.Errorf("timed out after %v, want exactly 5ms", got)
		}

		f := frame(t, boardMAC, proto.SensorLen, 1)
		go func() {
			time.Sleep(2 * time.Millisecond)
			b.WriteFrame(f)
		}()
		start = time.Now()
		n, err := a.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], f) {
			t.Fatalf("ReadFrame: %x, %v; want %x", buf[:n], err, f)
		}
		if got := time.Since(start); got != 2*time.Millisecond {
			t.Errorf("frame returned after %v, want when it was written (2ms)", got)
		}

		// The timer of a read that got its frame must not fire into the next read.
		setTimeout(t, 0, a)
		go func() {
			time.Sleep(10 * time.Millisecond)
			b.WriteFrame(f)
		}()
		start = time.Now()
		if _, err := a.ReadFrame(buf); err != nil {
			t.Fatalf("read without timeout: %v", err)
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Errorf("read without timeout returned after %v, want 10ms", got)
		}
	})
}

func TestPipeDropsWhenFull(t *testing.T) {
	a, b := link.Pipe()
	defer a.Close()
	defer b.Close()
	const extra = 3
	var sent [][]byte
	for i := range 32 + extra {
		f := frame(t, boardMAC, proto.AckLen, byte(i))
		sent = append(sent, f)
		if err := b.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Dropped(); got != extra {
		t.Errorf("Dropped() = %d, want %d", got, extra)
	}
	setTimeout(t, 10*time.Millisecond, a)
	buf := make([]byte, proto.MaxFrameLen)
	for i, want := range sent[:32] {
		n, err := a.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("frame %d: %x, %v; want %x", i, buf[:n], err, want)
		}
	}
	if _, err := a.ReadFrame(buf); err != link.ErrTimeout {
		t.Fatalf("after the queued frames: %v, want ErrTimeout", err)
	}
}

func TestPipeCopiesFrames(t *testing.T) {
	a, b := link.Pipe()
	defer a.Close()
	defer b.Close()
	f := frame(t, hostMAC, proto.InitLen, 1)
	want := bytes.Clone(f)
	if err := a.WriteFrame(f); err != nil {
		t.Fatal(err)
	}
	clear(f) // the writer reuses its buffer at once
	buf := make([]byte, proto.MaxFrameLen)
	n, err := b.ReadFrame(buf)
	if err != nil || !bytes.Equal(buf[:n], want) {
		t.Fatalf("read %x, %v; want %x", buf[:n], err, want)
	}
}
