package link

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Classic pcap file format (the one tcpdump writes by default), as Wireshark documents it.
const (
	pcapMagicMicro    = 0xa1b2c3d4 // timestamps in microseconds
	pcapMagicNano     = 0xa1b23c4d // timestamps in nanoseconds
	pcapVersionMajor  = 2
	pcapVersionMinor  = 4
	pcapSnapLen       = 65535
	linktypeEthernet  = 1
	pcapFileHeaderLen = 24
	pcapRecHeaderLen  = 16
	// pcapMaxRecordLen bounds what a corrupt length field can make us allocate; it is libpcap's
	// largest snap length.
	pcapMaxRecordLen = 262144
)

// ErrPcap marks a pcap file this package cannot read: truncated, corrupt, or not Ethernet.
var ErrPcap = errors.New("link: bad pcap file")

// PcapRecord is one frame of a pcap file.
type PcapRecord struct {
	Time  time.Time
	Frame []byte
}

// putPcapFileHeader fills the 24-byte header of a microsecond, little-endian, Ethernet pcap file.
func putPcapFileHeader(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], pcapMagicMicro)
	le.PutUint16(b[4:], pcapVersionMajor)
	le.PutUint16(b[6:], pcapVersionMinor)
	le.PutUint32(b[8:], 0)  // thiszone: timestamps are UTC
	le.PutUint32(b[12:], 0) // sigfigs
	le.PutUint32(b[16:], pcapSnapLen)
	le.PutUint32(b[20:], linktypeEthernet)
}

// putPcapRecordHeader fills the 16-byte header of a record of a frameLen-byte frame seen at t.
func putPcapRecordHeader(b []byte, t time.Time, frameLen int) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(t.Unix()))
	le.PutUint32(b[4:], uint32(t.Nanosecond()/1000))
	le.PutUint32(b[8:], uint32(frameLen))
	le.PutUint32(b[12:], uint32(frameLen))
}

// ReadPcap reads a whole classic pcap file of Ethernet frames: either byte order, microsecond or
// nanosecond timestamps (what tcpdump, tshark and NewRecorder write). Every record must hold
// its whole frame, since replay compares whole frames. Errors wrap ErrPcap and say which record
// is bad; no input makes it panic.
func ReadPcap(r io.Reader) ([]PcapRecord, error) {
	var hdr [pcapFileHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: empty file", ErrPcap)
		}
		return nil, fmt.Errorf("%w: file header: %w", ErrPcap, err)
	}
	var order binary.ByteOrder
	var nanos bool
	switch {
	case binary.LittleEndian.Uint32(hdr[0:]) == pcapMagicMicro:
		order = binary.LittleEndian
	case binary.BigEndian.Uint32(hdr[0:]) == pcapMagicMicro:
		order = binary.BigEndian
	case binary.LittleEndian.Uint32(hdr[0:]) == pcapMagicNano:
		order, nanos = binary.LittleEndian, true
	case binary.BigEndian.Uint32(hdr[0:]) == pcapMagicNano:
		order, nanos = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("%w: magic number %#08x is not classic pcap (pcapng is not supported)", ErrPcap, binary.LittleEndian.Uint32(hdr[0:]))
	}
	if major := order.Uint16(hdr[4:]); major != pcapVersionMajor {
		return nil, fmt.Errorf("%w: format version %d, want %d", ErrPcap, major, pcapVersionMajor)
	}
	if lt := order.Uint32(hdr[20:]); lt != linktypeEthernet {
		return nil, fmt.Errorf("%w: link type %d, want %d (Ethernet)", ErrPcap, lt, linktypeEthernet)
	}
	fracLimit := uint32(time.Second / time.Microsecond)
	fracUnit := time.Microsecond
	if nanos {
		fracLimit, fracUnit = uint32(time.Second), time.Nanosecond
	}

	var records []PcapRecord
	for i := 0; ; i++ {
		var rh [pcapRecHeaderLen]byte
		if _, err := io.ReadFull(r, rh[:]); err != nil {
			if err == io.EOF {
				return records, nil
			}
			return nil, fmt.Errorf("%w: record %d header: %w", ErrPcap, i, eofIsUnexpected(err))
		}
		sec, frac := order.Uint32(rh[0:]), order.Uint32(rh[4:])
		captured, original := order.Uint32(rh[8:]), order.Uint32(rh[12:])
		switch {
		case frac >= fracLimit:
			return nil, fmt.Errorf("%w: record %d: timestamp fraction %d out of range", ErrPcap, i, frac)
		case captured > pcapMaxRecordLen:
			return nil, fmt.Errorf("%w: record %d: captured length %d exceeds %d", ErrPcap, i, captured, pcapMaxRecordLen)
		case captured != original:
			return nil, fmt.Errorf("%w: record %d: holds %d of the frame's %d bytes (capture with a larger snap length)", ErrPcap, i, captured, original)
		}
		frame := make([]byte, captured)
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, fmt.Errorf("%w: record %d: frame of %d bytes: %w", ErrPcap, i, captured, eofIsUnexpected(err))
		}
		t := time.Unix(int64(sec), int64(frac)*int64(fracUnit)).UTC()
		records = append(records, PcapRecord{Time: t, Frame: frame})
	}
}

// eofIsUnexpected reports a file that ends inside a structure as truncated, not as a clean end.
func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
