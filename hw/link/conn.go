package link

import (
	"errors"
	"fmt"
	"time"
)

// Conn moves whole Ethernet frames. One WriteFrame sends one frame; one ReadFrame returns one.
// ReadFrame blocks until a frame arrives, the read timeout passes (ErrTimeout) or the Conn is
// closed (ErrClosed). A read timeout of zero, the default, waits forever. At most one goroutine
// reads at a time; writing from another goroutine while one reads is fine, and Close may be
// called from any goroutine. No method allocates after set-up.
type Conn interface {
	WriteFrame(frame []byte) error
	ReadFrame(buf []byte) (int, error)
	SetReadTimeout(d time.Duration) error
	Close() error
}

// Errors callers branch on.
var (
	// ErrTimeout is returned, unwrapped, by ReadFrame when no frame arrived within the read timeout.
	ErrTimeout = errors.New("link: read timed out")
	// ErrClosed is returned, unwrapped, by every method of a Conn after Close.
	ErrClosed = errors.New("link: connection closed")
	// ErrShortBuffer means a received frame did not fit the read buffer; the frame is dropped.
	ErrShortBuffer = errors.New("link: frame larger than the read buffer")
	// ErrFrameLength means a frame given to WriteFrame is shorter than an Ethernet header or
	// longer than an Ethernet frame.
	ErrFrameLength = errors.New("link: frame length outside the Ethernet limits")
	// ErrNotPermitted means the process may not open a raw socket: it lacks CAP_NET_RAW.
	ErrNotPermitted = errors.New("link: not permitted")
)

const (
	// ethHeaderLen is dst MAC, src MAC and EtherType: the least a frame can be.
	ethHeaderLen = 14
	// maxFrameLen is the longest frame a standard 1500-byte MTU carries (no FCS).
	maxFrameLen = ethHeaderLen + 1500
	// srcMACOffset is where the sender's address starts in a frame.
	srcMACOffset = 6
)

func checkFrameLength(frame []byte) error {
	if len(frame) < ethHeaderLen || len(frame) > maxFrameLen {
		return fmt.Errorf("%w: %d bytes (want %d..%d)", ErrFrameLength, len(frame), ethHeaderLen, maxFrameLen)
	}
	return nil
}

func shortBufferError(frameLen, bufLen int) error {
	return fmt.Errorf("%w: %d-byte frame, %d-byte buffer (use a buffer of proto.MaxFrameLen)", ErrShortBuffer, frameLen, bufLen)
}

func checkTimeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("link: negative read timeout %v", d)
	}
	return nil
}
