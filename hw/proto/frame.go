package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire constants of protocol v4.
const (
	// EtherType of every master-board frame.
	EtherType = 0x88B5
	// Version is the protocol version this package speaks.
	Version = 4

	InitLen    = 4
	AckLen     = 5
	CommandLen = 172
	SensorLen  = 208

	// v3LenAck and v3LenSensor are what a protocol v3 board sends: detected, never parsed.
	v3LenAck    = 3
	v3LenSensor = 200

	// FrameHeaderLen covers dst MAC, src MAC, EtherType and the payload length field.
	FrameHeaderLen = 16
	// MinFrameLen is the Ethernet minimum the frame is zero-padded to.
	MinFrameLen = 64
	// MaxFrameLen is the longest frame of protocol v4 (a sensor frame).
	MaxFrameLen = FrameHeaderLen + SensorLen

	NumDrivers       = 6
	MotorsPerDriver  = 2
	NumMotors        = NumDrivers * MotorsPerDriver
	driverCommandLen = 28
	driverSensorLen  = 28
)

// MAC is an Ethernet hardware address.
type MAC [6]byte

// Broadcast is where both sides send: the board accepts any source address.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// Kind names a payload. Payloads are told apart by their length only.
type Kind uint8

const (
	KindUnknown Kind = iota
	KindInit
	KindAck
	KindCommand
	KindSensor
)

func (k Kind) String() string {
	switch k {
	case KindInit:
		return "init"
	case KindAck:
		return "ack"
	case KindCommand:
		return "command"
	case KindSensor:
		return "sensor"
	}
	return "unknown"
}

// Errors of frame parsing. Callers branch on them to count drops.
var (
	ErrShortFrame    = errors.New("proto: frame shorter than the 16-byte header")
	ErrEtherType     = errors.New("proto: not a master-board frame (EtherType is not 0x88B5)")
	ErrLengthField   = errors.New("proto: payload length field exceeds the frame")
	ErrPayloadLength = errors.New("proto: no v4 payload has this length")
	// ErrProtocolV3 marks a frame from a protocol v3 board (3-byte ack or 200-byte sensor packet).
	ErrProtocolV3 = errors.New("proto: frame from a protocol v3 board (host speaks v4): update the board firmware")
	ErrBufferSize = errors.New("proto: buffer has the wrong size for this payload")
)

// KindOfLength maps a payload length to its kind.
func KindOfLength(n int) (Kind, error) {
	switch n {
	case InitLen:
		return KindInit, nil
	case AckLen:
		return KindAck, nil
	case CommandLen:
		return KindCommand, nil
	case SensorLen:
		return KindSensor, nil
	case v3LenAck, v3LenSensor:
		return KindUnknown, ErrProtocolV3
	}
	return KindUnknown, ErrPayloadLength
}

// FrameLen is the length of the frame that carries a payload of n bytes, padding included.
func FrameLen(n int) int {
	return max(FrameHeaderLen+n, MinFrameLen)
}

// PutFrame writes the frame carrying payload from src to broadcast into frame and returns its
// length. frame must hold FrameLen(len(payload)) bytes; the padding is zeroed.
func PutFrame(frame []byte, src MAC, payload []byte) (int, error) {
	n := FrameLen(len(payload))
	if len(frame) < n {
		return 0, fmt.Errorf("%w: frame buffer %d bytes, need %d", ErrBufferSize, len(frame), n)
	}
	copy(frame[0:6], Broadcast[:])
	copy(frame[6:12], src[:])
	binary.BigEndian.PutUint16(frame[12:14], EtherType)
	binary.LittleEndian.PutUint16(frame[14:16], uint16(len(payload)))
	copy(frame[FrameHeaderLen:], payload)
	clear(frame[FrameHeaderLen+len(payload) : n])
	return n, nil
}

// PayloadBuffer returns the part of frame where a payload of n bytes goes, so a caller can marshal
// straight into a frame buffer and then call PutHeader, with no copy.
func PayloadBuffer(frame []byte, n int) []byte {
	return frame[FrameHeaderLen : FrameHeaderLen+n]
}

// PutHeader writes the frame header for a payload of n bytes already in place (see PayloadBuffer),
// zeroes the padding and returns the frame length.
func PutHeader(frame []byte, src MAC, n int) (int, error) {
	total := FrameLen(n)
	if len(frame) < total {
		return 0, fmt.Errorf("%w: frame buffer %d bytes, need %d", ErrBufferSize, len(frame), total)
	}
	copy(frame[0:6], Broadcast[:])
	copy(frame[6:12], src[:])
	binary.BigEndian.PutUint16(frame[12:14], EtherType)
	binary.LittleEndian.PutUint16(frame[14:16], uint16(n))
	clear(frame[FrameHeaderLen+n : total])
	return total, nil
}

// SourceMAC returns the sender's address of a frame of at least 12 bytes.
func SourceMAC(frame []byte) (MAC, bool) {
	var m MAC
	if len(frame) < 12 {
		return m, false
	}
	copy(m[:], frame[6:12])
	return m, true
}

// ParsePayload checks a received frame and returns the kind and bytes of its payload (a sub-slice
// of frame, no copy). Trailing bytes past the payload are padding and ignored.
func ParsePayload(frame []byte) (Kind, []byte, error) {
	if len(frame) < FrameHeaderLen {
		return KindUnknown, nil, ErrShortFrame
	}
	if binary.BigEndian.Uint16(frame[12:14]) != EtherType {
		return KindUnknown, nil, ErrEtherType
	}
	n := int(binary.LittleEndian.Uint16(frame[14:16]))
	if FrameHeaderLen+n > len(frame) {
		return KindUnknown, nil, ErrLengthField
	}
	kind, err := KindOfLength(n)
	if err != nil {
		return KindUnknown, nil, err
	}
	return kind, frame[FrameHeaderLen : FrameHeaderLen+n], nil
}
