package recorder

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/foxglove/mcap/go/mcap"
)

// FuzzReader feeds arbitrary bytes to the reader: it must end in io.EOF or one of its typed
// errors, never panic, and never return a tick whose payloads have the wrong size.
func FuzzReader(f *testing.F) {
	whole := smallRecording(f, 3) // small: the fuzzer minimises every new input it finds
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add(whole[:len(whole)-3])
	f.Add([]byte{})
	f.Add(mcap.Magic)
	f.Add(append(bytes.Clone(mcap.Magic), 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrNotRecording) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("NewReader: untyped error %v", err)
			}
			return
		}
		defer r.Close()
		for {
			tick, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Next: untyped error %v", err)
				}
				return
			}
			if len(tick.Sensor) != 0 && len(tick.Sensor) != 208 || len(tick.Command) != 0 && len(tick.Command) != 172 {
				t.Fatalf("tick %d with payloads of %d and %d bytes", tick.Index, len(tick.Sensor), len(tick.Command))
			}
		}
	})
}
