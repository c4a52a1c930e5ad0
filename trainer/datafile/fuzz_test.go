package datafile

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

// FuzzDecode feeds arbitrary bytes to both archive decoders: every input is either a valid
// archive or an ErrFormat error, never a panic or an unbounded allocation.
func FuzzDecode(f *testing.F) {
	o := sample(f, skills.Locomotion48(), 6)
	good := encode(f, o)
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add(flipByte(good, len(good)/2))
	f.Add(rezip(f, good, func(name string, b []byte) []byte {
		if name == memberModes+".npy" {
			return b[:len(b)-1]
		}
		return b
	}))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if off, err := DecodeOffline(bytes.NewReader(data), int64(len(data))); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("offline: error %v does not wrap ErrFormat", err)
			}
		} else if err := off.Validate(); err != nil {
			t.Fatalf("decoded an invalid archive: %v", err)
		}
		if e, err := DecodeExpert(bytes.NewReader(data), int64(len(data))); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("expert: error %v does not wrap ErrFormat", err)
			}
		} else if err := e.Validate(); err != nil {
			t.Fatalf("decoded an invalid expert archive: %v", err)
		}
	})
}
