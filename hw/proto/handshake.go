package proto

import (
	"encoding/binary"
	"fmt"
)

// Init is what the host sends until the board acknowledges: it names the protocol version and the
// session id the board will accept commands from. The firmware takes any id, 0 included.
type Init struct {
	Version   uint16
	SessionID uint16
}

// Marshal writes the 4-byte init payload into dst.
func (m *Init) Marshal(dst []byte) error {
	if len(dst) != InitLen {
		return fmt.Errorf("%w: init needs %d bytes, got %d", ErrBufferSize, InitLen, len(dst))
	}
	binary.LittleEndian.PutUint16(dst[0:], m.Version)
	binary.LittleEndian.PutUint16(dst[2:], m.SessionID)
	return nil
}

// Unmarshal reads a 4-byte init payload.
func (m *Init) Unmarshal(src []byte) error {
	if len(src) != InitLen {
		return fmt.Errorf("%w: init is %d bytes, got %d", ErrBufferSize, InitLen, len(src))
	}
	m.Version = binary.LittleEndian.Uint16(src[0:])
	m.SessionID = binary.LittleEndian.Uint16(src[2:])
	return nil
}

// Ack is the board's answer to an init. A board of another protocol version answers with ITS
// version and ignores the init.
type Ack struct {
	Version   uint16
	SessionID uint16
	// SPIConnected has bit i set when driver i answered during SPI auto-detection.
	SPIConnected uint8
}

// Marshal writes the 5-byte ack payload into dst.
func (m *Ack) Marshal(dst []byte) error {
	if len(dst) != AckLen {
		return fmt.Errorf("%w: ack needs %d bytes, got %d", ErrBufferSize, AckLen, len(dst))
	}
	binary.LittleEndian.PutUint16(dst[0:], m.Version)
	binary.LittleEndian.PutUint16(dst[2:], m.SessionID)
	dst[4] = m.SPIConnected
	return nil
}

// Unmarshal reads a 5-byte ack payload.
func (m *Ack) Unmarshal(src []byte) error {
	if len(src) != AckLen {
		return fmt.Errorf("%w: ack is %d bytes, got %d", ErrBufferSize, AckLen, len(src))
	}
	m.Version = binary.LittleEndian.Uint16(src[0:])
	m.SessionID = binary.LittleEndian.Uint16(src[2:])
	m.SPIConnected = src[4]
	return nil
}

// VersionMismatchError reports a board that speaks another protocol version.
type VersionMismatchError struct {
	Board, Host uint16
}

func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("protocol version mismatch (board v%d, host v%d)", e.Board, e.Host)
}
