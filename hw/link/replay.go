package link

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
)

// ErrEndOfRecording is returned when a Replay has no more frames of the asked direction.
var ErrEndOfRecording = errors.New("link: end of recording")

// MismatchError says that a frame sent to a Replay differs from the one recorded at that point.
type MismatchError struct {
	// Index is the recorded frame's position in the pcap file, from 0 (Wireshark's frame
	// number is Index+1).
	Index int
	// Offset is the first byte that differs; when one frame is a prefix of the other, it is the
	// shorter length and Want or Got is 0 for the missing byte.
	Offset    int
	Want, Got byte
	// WantLen and GotLen are the lengths of the recorded and the sent frame.
	WantLen, GotLen int
}

func (e *MismatchError) Error() string {
	if e.Offset < e.WantLen && e.Offset < e.GotLen {
		return fmt.Sprintf("link: replay mismatch at pcap frame %d (index %d), byte %d: recorded %#02x, sent %#02x",
			e.Index+1, e.Index, e.Offset, e.Want, e.Got)
	}
	return fmt.Sprintf("link: replay mismatch at pcap frame %d (index %d): recorded %d bytes, sent %d",
		e.Index+1, e.Index, e.WantLen, e.GotLen)
}

type replayFrame struct {
	index int // position in the pcap file
	data  []byte
}

// Replay is a Conn that plays a pcap recording back. Frames whose source MAC is the configured
// local address were sent by our side when recorded; all others came from the peer. ReadFrame
// returns the peer's frames in order, as fast as asked (timestamps are ignored). WriteFrame checks
// each frame against our side's next recorded frame and returns a *MismatchError naming the first
// differing byte; either way the recording moves on by one frame. Frames of EtherTypes other than
// 0x88B5 (a tcpdump capture of a busy interface) are skipped, as the Ethernet link's kernel
// filter would.
type Replay struct {
	peer, own []replayFrame

	mu                sync.Mutex
	nextPeer, nextOwn int
	closed            atomic.Bool
}

// NewReplay reads the whole pcap recording from r; local is our side's MAC in it.
func NewReplay(r io.Reader, local proto.MAC) (*Replay, error) {
	records, err := ReadPcap(r)
	if err != nil {
		return nil, err
	}
	rp := &Replay{}
	for i, rec := range records {
		f := rec.Frame
		if len(f) < ethHeaderLen || binary.BigEndian.Uint16(f[12:]) != proto.EtherType {
			continue
		}
		if proto.MAC(f[srcMACOffset:]) == local {
			rp.own = append(rp.own, replayFrame{index: i, data: f})
		} else {
			rp.peer = append(rp.peer, replayFrame{index: i, data: f})
		}
	}
	return rp, nil
}

// ReadFrame copies the peer's next recorded frame into buf.
func (rp *Replay) ReadFrame(buf []byte) (int, error) {
	if rp.closed.Load() {
		return 0, ErrClosed
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.nextPeer == len(rp.peer) {
		return 0, fmt.Errorf("%w: all %d peer frames read", ErrEndOfRecording, len(rp.peer))
	}
	f := rp.peer[rp.nextPeer].data
	rp.nextPeer++
	if len(f) > len(buf) {
		return 0, shortBufferError(len(f), len(buf))
	}
	return copy(buf, f), nil
}

// WriteFrame compares frame with our side's next recorded frame.
func (rp *Replay) WriteFrame(frame []byte) error {
	if rp.closed.Load() {
		return ErrClosed
	}
	if err := checkFrameLength(frame); err != nil {
		return err
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.nextOwn == len(rp.own) {
		return fmt.Errorf("%w: all %d frames of our side already sent", ErrEndOfRecording, len(rp.own))
	}
	want := rp.own[rp.nextOwn]
	rp.nextOwn++
	return compareFrames(want.index, want.data, frame)
}

// Remaining is how many recorded frames are left to read from the peer and to send.
func (rp *Replay) Remaining() (peer, own int) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.peer) - rp.nextPeer, len(rp.own) - rp.nextOwn
}

// SetReadTimeout is accepted for the Conn contract; a replay never waits.
func (rp *Replay) SetReadTimeout(d time.Duration) error {
	if rp.closed.Load() {
		return ErrClosed
	}
	return checkTimeout(d)
}

// Close makes every later call return ErrClosed.
func (rp *Replay) Close() error {
	if rp.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

func compareFrames(index int, want, got []byte) error {
	n := min(len(want), len(got))
	for i := range n {
		if want[i] != got[i] {
			return &MismatchError{Index: index, Offset: i, Want: want[i], Got: got[i], WantLen: len(want), GotLen: len(got)}
		}
	}
	if len(want) == len(got) {
		return nil
	}
	e := &MismatchError{Index: index, Offset: n, WantLen: len(want), GotLen: len(got)}
	if n < len(want) {
		e.Want = want[n]
	} else {
		e.Got = got[n]
	}
	return e
}
