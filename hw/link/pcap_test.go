package link_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// pcapFile builds a classic pcap file by hand, so tests reach formats NewRecorder never writes.
type pcapFile struct {
	order    binary.AppendByteOrder
	magic    uint32
	major    uint16
	linktype uint32
	records  []pcapRec
}

type pcapRec struct {
	sec, frac, incl, orig uint32
	data                  []byte
}

func (p pcapFile) bytes() []byte {
	b := p.order.AppendUint32(nil, p.magic)
	b = p.order.AppendUint16(b, p.major)
	b = p.order.AppendUint16(b, 4)
	b = p.order.AppendUint32(b, 0)
	b = p.order.AppendUint32(b, 0)
	b = p.order.AppendUint32(b, 65535)
	b = p.order.AppendUint32(b, p.linktype)
	for _, r := range p.records {
		for _, v := range []uint32{r.sec, r.frac, r.incl, r.orig} {
			b = p.order.AppendUint32(b, v)
		}
		b = append(b, r.data...)
	}
	return b
}

func validPcap(tb testing.TB, order binary.AppendByteOrder, magic uint32) pcapFile {
	f1, f2 := frame(tb, hostMAC, proto.InitLen, 1), frame(tb, boardMAC, proto.AckLen, 2)
	return pcapFile{order: order, magic: magic, major: 2, linktype: 1, records: []pcapRec{
		{sec: 1700000000, frac: 999999, incl: uint32(len(f1)), orig: uint32(len(f1)), data: f1},
		{sec: 1700000001, frac: 5, incl: uint32(len(f2)), orig: uint32(len(f2)), data: f2},
	}}
}

func TestReadPcapFormats(t *testing.T) {
	tests := []struct {
		name      string
		order     binary.AppendByteOrder
		magic     uint32
		wantFrac0 time.Duration
	}{
		{"little-endian microseconds", binary.LittleEndian, 0xa1b2c3d4, 999999 * time.Microsecond},
		{"big-endian microseconds", binary.BigEndian, 0xa1b2c3d4, 999999 * time.Microsecond},
		{"little-endian nanoseconds", binary.LittleEndian, 0xa1b23c4d, 999999 * time.Nanosecond},
		{"big-endian nanoseconds", binary.BigEndian, 0xa1b23c4d, 999999 * time.Nanosecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPcap(t, tc.order, tc.magic)
			recs, err := link.ReadPcap(bytes.NewReader(p.bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != len(p.records) {
				t.Fatalf("%d records, want %d", len(recs), len(p.records))
			}
			if want := time.Unix(1700000000, int64(tc.wantFrac0)).UTC(); !recs[0].Time.Equal(want) {
				t.Errorf("first timestamp %v, want %v", recs[0].Time, want)
			}
			for i, r := range recs {
				if !bytes.Equal(r.Frame, p.records[i].data) {
					t.Errorf("record %d: %x, want %x", i, r.Frame, p.records[i].data)
				}
			}
		})
	}
}

func TestReadPcapMalformed(t *testing.T) {
	valid := validPcap(t, binary.LittleEndian, 0xa1b2c3d4)
	validBytes := valid.bytes()
	with := func(change func(*pcapFile)) []byte {
		p := valid
		p.records = append([]pcapRec(nil), valid.records...)
		change(&p)
		return p.bytes()
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty file", nil, "empty file"},
		{"half a header", validBytes[:12], "file header: unexpected EOF"},
		{"pcapng", append([]byte{0x0a, 0x0d, 0x0d, 0x0a}, validBytes[4:]...), "pcapng is not supported"},
		{"text file", []byte("this is not a capture, just some text"), "not classic pcap"},
		{"version 3", with(func(p *pcapFile) { p.major = 3 }), "format version 3"},
		{"not Ethernet", with(func(p *pcapFile) { p.linktype = 101 }), "link type 101"},
		{"record header cut", validBytes[:24+10], "record 0 header: unexpected EOF"},
		{"frame cut", validBytes[:len(validBytes)-1], "record 1: frame of 64 bytes: unexpected EOF"},
		{"snapped frame", with(func(p *pcapFile) { p.records[0].orig = 1514 }), "holds 64 of the frame's 1514 bytes"},
		{"huge length", with(func(p *pcapFile) { p.records[1].incl, p.records[1].orig = 1<<31, 1<<31 }), "captured length 2147483648 exceeds"},
		{"microseconds overflow", with(func(p *pcapFile) { p.records[0].frac = 1000000 }), "timestamp fraction 1000000 out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := link.ReadPcap(bytes.NewReader(tc.in))
			if !errors.Is(err, link.ErrPcap) {
				t.Fatalf("ReadPcap = %d records, %v; want ErrPcap", len(recs), err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if _, err := link.NewReplay(bytes.NewReader(tc.in), hostMAC); !errors.Is(err, link.ErrPcap) {
				t.Errorf("NewReplay: %v, want ErrPcap", err)
			}
		})
	}
}

func FuzzReadPcap(f *testing.F) {
	valid := validPcap(f, binary.LittleEndian, 0xa1b2c3d4).bytes()
	f.Add(valid)
	f.Add(validPcap(f, binary.BigEndian, 0xa1b23c4d).bytes())
	f.Add(valid[:len(valid)-3])
	f.Add(valid[:24])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := link.ReadPcap(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, link.ErrPcap) {
				t.Fatalf("error %v does not wrap ErrPcap", err)
			}
			return
		}
		total := 24
		for _, r := range recs {
			total += 16 + len(r.Frame)
		}
		if total != len(in) {
			t.Fatalf("records cover %d of %d bytes", total, len(in))
		}
		rp, err := link.NewReplay(bytes.NewReader(in), hostMAC)
		if err != nil {
			t.Fatalf("ReadPcap accepted what NewReplay refuses: %v", err)
		}
		buf := make([]byte, 64)
		for {
			if _, err := rp.ReadFrame(buf); errors.Is(err, link.ErrEndOfRecording) {
				break
			}
		}
	})
}
