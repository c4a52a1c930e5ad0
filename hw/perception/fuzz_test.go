package perception_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/perception"
)

// FuzzUnmarshal: any input either decodes to a sample that encodes back to the same bytes (the
// reserved bytes aside), or is refused with one of the sentinels; nothing panics.
func FuzzUnmarshal(f *testing.F) {
	d := sample(1)
	valid := encode(f, &d)
	f.Add(valid)
	f.Add(valid[:perception.Size-1])
	f.Add(append(append([]byte(nil), valid...), 1, 2, 3))
	f.Add([]byte("DFPM"))
	f.Add([]byte{})
	nan := append([]byte(nil), valid...)
	copy(nan[56:], []byte{0, 0, 0xc0, 0x7f}) // float32 NaN
	f.Add(nan)
	v2 := append([]byte(nil), valid...)
	v2[4] = 2
	f.Add(v2)
	f.Fuzz(func(t *testing.T, in []byte) {
		var got perception.Datagram
		err := got.Unmarshal(in)
		if err != nil {
			for _, s := range []error{perception.ErrShort, perception.ErrLong, perception.ErrMagic,
				perception.ErrVersion, perception.ErrNonFinite} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v matches no sentinel", err)
		}
		for _, v := range got.Heights {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatal("accepted a non-finite height")
			}
		}
		out := make([]byte, perception.Size)
		if err := got.Marshal(out); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		want := append([]byte(nil), in...)
		want[6], want[7] = 0, 0
		if !bytes.Equal(out, want) {
			t.Fatalf("re-encoded bytes differ:\n%x\n%x", out, want)
		}
	})
}
