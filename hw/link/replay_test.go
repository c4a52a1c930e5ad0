package link_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// session is a short host/board exchange: which side sends, and the frame.
type sessionFrame struct {
	fromHost bool
	frame    []byte
}

func session(tb testing.TB) []sessionFrame {
	s := []sessionFrame{
		{true, frame(tb, hostMAC, proto.InitLen, 1)},
		{false, frame(tb, boardMAC, proto.AckLen, 2)},
	}
	for i := range 3 {
		s = append(s,
			sessionFrame{true, frame(tb, hostMAC, proto.CommandLen, byte(10+i))},
			sessionFrame{false, frame(tb, boardMAC, proto.SensorLen, byte(20+i))})
	}
	return s
}

// record plays the session over a pipe whose host end is recorded, and returns the pcap bytes.
func record(t *testing.T, s []sessionFrame) []byte {
	t.Helper()
	host, board := link.Pipe()
	var pcap bytes.Buffer
	rec, err := link.NewRecorder(host, &pcap)
	if err != nil {
		t.Fatal(err)
	}
	setTimeout(t, time.Second, rec, board)
	buf := make([]byte, proto.MaxFrameLen)
	for i, f := range s {
		from, to := link.Conn(rec), link.Conn(board)
		if !f.fromHost {
			from, to = board, rec
		}
		if err := from.WriteFrame(f.frame); err != nil {
			t.Fatal(err)
		}
		if n, err := to.ReadFrame(buf); err != nil || !bytes.Equal(buf[:n], f.frame) {
			t.Fatalf("frame %d: %x, %v", i, buf[:n], err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	board.Close()
	return pcap.Bytes()
}

func TestRecorderWritesValidPcap(t *testing.T) {
	s := session(t)
	before := time.Now().Truncate(time.Microsecond)
	pcap := record(t, s)
	after := time.Now()

	le := binary.LittleEndian
	if len(pcap) < 24 {
		t.Fatalf("pcap is %d bytes", len(pcap))
	}
	header := []struct {
		name      string
		got, want uint32
	}{
		{"magic (microsecond timestamps)", le.Uint32(pcap[0:]), 0xa1b2c3d4},
		{"version major", uint32(le.Uint16(pcap[4:])), 2},
		{"version minor", uint32(le.Uint16(pcap[6:])), 4},
		{"thiszone", le.Uint32(pcap[8:]), 0},
		{"sigfigs", le.Uint32(pcap[12:]), 0},
		{"snaplen", le.Uint32(pcap[16:]), 65535},
		{"linktype (LINKTYPE_ETHERNET)", le.Uint32(pcap[20:]), 1},
	}
	for _, h := range header {
		if h.got != h.want {
			t.Errorf("header %s = %#x, want %#x", h.name, h.got, h.want)
		}
	}
	rest, prev := pcap[24:], before
	for i, f := range s {
		if len(rest) < 16 {
			t.Fatalf("record %d: %d bytes left", i, len(rest))
		}
		ts := time.Unix(int64(le.Uint32(rest[0:])), int64(le.Uint32(rest[4:]))*1000)
		incl, orig := int(le.Uint32(rest[8:])), int(le.Uint32(rest[12:]))
		if usec := le.Uint32(rest[4:]); usec >= 1e6 {
			t.Errorf("record %d: %d microseconds", i, usec)
		}
		if ts.Before(prev) || ts.After(after) {
			t.Errorf("record %d: timestamp %v outside [%v, %v]", i, ts, prev, after)
		}
		prev = ts
		if incl != len(f.frame) || orig != len(f.frame) {
			t.Fatalf("record %d: lengths %d/%d, want %d", i, incl, orig, len(f.frame))
		}
		if !bytes.Equal(rest[16:16+incl], f.frame) {
			t.Errorf("record %d holds %x, want %x", i, rest[16:16+incl], f.frame)
		}
		rest = rest[16+incl:]
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes after the last record", len(rest))
	}
}

func TestReplayRoundTrip(t *testing.T) {
	s := session(t)
	pcap := record(t, s)
	rp, err := link.NewReplay(bytes.NewReader(pcap), hostMAC)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, proto.MaxFrameLen)
	for i, f := range s {
		if f.fromHost {
			if err := rp.WriteFrame(f.frame); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			continue
		}
		n, err := rp.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], f.frame) {
			t.Fatalf("frame %d: read %x, %v; want %x", i, buf[:n], err, f.frame)
		}
	}
	if peer, own := rp.Remaining(); peer != 0 || own != 0 {
		t.Errorf("Remaining() = %d, %d after the whole session", peer, own)
	}
	if _, err := rp.ReadFrame(buf); !errors.Is(err, link.ErrEndOfRecording) {
		t.Errorf("read past the end: %v", err)
	}
	if err := rp.WriteFrame(s[0].frame); !errors.Is(err, link.ErrEndOfRecording) {
		t.Errorf("write past the end: %v", err)
	}
	if err := rp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rp.ReadFrame(buf); err != link.ErrClosed {
		t.Errorf("read after Close: %v", err)
	}
}

func TestReplayMismatch(t *testing.T) {
	s := session(t)
	pcap := record(t, s)
	const cmdIndex = 4 // pcap index of the host's second command: init, ack, cmd, sensor, cmd
	tests := []struct {
		name   string
		change func([]byte) []byte
		want   link.MismatchError
		msg    string
	}{
		{
			name:   "byte changed",
			change: func(f []byte) []byte { f[40] ^= 0xff; return f },
			want:   link.MismatchError{Index: cmdIndex, Offset: 40, Want: s[cmdIndex].frame[40], Got: s[cmdIndex].frame[40] ^ 0xff, WantLen: 188, GotLen: 188},
			msg:    "pcap frame 5 (index 4), byte 40",
		},
		{
			name:   "frame too short",
			change: func(f []byte) []byte { return f[:100] },
			want:   link.MismatchError{Index: cmdIndex, Offset: 100, Want: s[cmdIndex].frame[100], WantLen: 188, GotLen: 100},
			msg:    "recorded 188 bytes, sent 100",
		},
		{
			name:   "frame too long",
			change: func(f []byte) []byte { return append(f, 0x5a) },
			want:   link.MismatchError{Index: cmdIndex, Offset: 188, Got: 0x5a, WantLen: 188, GotLen: 189},
			msg:    "recorded 188 bytes, sent 189",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := link.NewReplay(bytes.NewReader(pcap), hostMAC)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, proto.MaxFrameLen)
			for i, f := range s[:cmdIndex] {
				if f.fromHost {
					err = rp.WriteFrame(f.frame)
				} else {
					_, err = rp.ReadFrame(buf)
				}
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
			err = rp.WriteFrame(tc.change(bytes.Clone(s[cmdIndex].frame)))
			var mm *link.MismatchError
			if !errors.As(err, &mm) {
				t.Fatalf("got %v, want a *MismatchError", err)
			}
			if *mm != tc.want {
				t.Errorf("got %+v, want %+v", *mm, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not say %q", err, tc.msg)
			}
			// The replay moved on: the next recorded host frame still matches.
			if _, err := rp.ReadFrame(buf); err != nil {
				t.Fatal(err)
			}
			if err := rp.WriteFrame(s[cmdIndex+2].frame); err != nil {
				t.Errorf("frame after the mismatch: %v", err)
			}
		})
	}
}

func TestReplaySkipsOtherEtherTypes(t *testing.T) {
	host, board := link.Pipe()
	var pcap bytes.Buffer
	rec, err := link.NewRecorder(board, &pcap)
	if err != nil {
		t.Fatal(err)
	}
	noise := frame(t, boardMAC, proto.AckLen, 1)
	binary.BigEndian.PutUint16(noise[12:], 0x86DD)
	want := frame(t, boardMAC, proto.AckLen, 2)
	for _, f := range [][]byte{noise, want} {
		if err := rec.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	rec.Close()
	host.Close()
	rp, err := link.NewReplay(&pcap, hostMAC)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, proto.MaxFrameLen)
	n, err := rp.ReadFrame(buf)
	if err != nil || !bytes.Equal(buf[:n], want) {
		t.Fatalf("read %x, %v; want %x", buf[:n], err, want)
	}
}

// failingWriter accepts limit bytes, then fails.
type failingWriter struct{ limit int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		n := w.limit
		w.limit = 0
		return n, errDiskFull
	}
	w.limit -= len(p)
	return len(p), nil
}

func TestRecorderErrorNeverBreaksTheLink(t *testing.T) {
	if _, err := link.NewRecorder(openPipe(t).host, &failingWriter{limit: 10}); !errors.Is(err, errDiskFull) {
		t.Fatalf("NewRecorder on a failing writer: %v", err)
	}
	p := openPipe(t)
	rec, err := link.NewRecorder(p.host, &failingWriter{limit: 24 + 16 + 64})
	if err != nil {
		t.Fatal(err)
	}
	setTimeout(t, time.Second, p.board)
	for i := range 3 {
		if err := rec.WriteFrame(frame(t, hostMAC, proto.InitLen, byte(i))); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if _, err := p.board.ReadFrame(make([]byte, proto.MaxFrameLen)); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if err := rec.Err(); !errors.Is(err, errDiskFull) {
		t.Errorf("Err() = %v, want the writer's error", err)
	}
	if err := rec.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close() = %v, want the recording error", err)
	}
}

func TestRecorderAndReplayDoNotAllocate(t *testing.T) {
	p := openPipe(t)
	rec, err := link.NewRecorder(p.host, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	setTimeout(t, time.Second, rec, p.board)
	cmd, sensor := frame(t, hostMAC, proto.CommandLen, 1), frame(t, boardMAC, proto.SensorLen, 2)
	buf := make([]byte, proto.MaxFrameLen)
	if allocs := testing.AllocsPerRun(100, func() {
		rec.WriteFrame(cmd)
		p.board.ReadFrame(buf)
		p.board.WriteFrame(sensor)
		rec.ReadFrame(buf)
	}); allocs != 0 {
		t.Errorf("recorder: %v allocations per exchange", allocs)
	}

	s := session(t)
	rp, err := link.NewReplay(bytes.NewReader(record(t, s)), hostMAC)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if allocs := testing.AllocsPerRun(len(s)/2-1, func() {
		if err := rp.WriteFrame(s[i].frame); err != nil {
			t.Fatal(err)
		}
		if _, err := rp.ReadFrame(buf); err != nil {
			t.Fatal(err)
		}
		i += 2
	}); allocs != 0 {
		t.Errorf("replay: %v allocations per exchange", allocs)
	}
}
