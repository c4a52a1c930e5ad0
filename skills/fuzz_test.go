package skills

import (
	"archive/zip"
	"bytes"
	"math"
	"reflect"
	"slices"
	"testing"
)

// FuzzReadBank feeds arbitrary bytes to the bank reader: it must never panic,
// and whatever it accepts must be a valid bank that survives a round trip.
func FuzzReadBank(f *testing.F) {
	good := encode(f, sampleBank(f, Locomotion48(), 1, 2, 4, 8))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/3] ^= 0xFF
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBank(bytes.NewReader(data), int64(len(data)), DefaultLimits)
		if err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted an invalid bank: %v", err)
		}
		var buf bytes.Buffer
		if err := EncodeBank(&buf, b); err != nil {
			t.Fatalf("accepted bank does not re-encode: %v", err)
		}
		back, err := DecodeBank(bytes.NewReader(buf.Bytes()), int64(buf.Len()), DefaultLimits)
		if err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("accepted bank does not round-trip: %v", err)
		}
	})
}

// FuzzBankManifest rewrites the manifest of a valid bank and re-zips it with
// a correct CRC, so the fuzzer explores the manifest-driven checks (array
// table, references, shapes, contract, metadata) that zip CRC-32 hides from
// FuzzReadBank.
func FuzzBankManifest(f *testing.F) {
	ms := unzipMembers(f, encode(f, sampleBank(f, Locomotion48(), 2, 2, 3, 4)))
	js := ms[0].data
	f.Add(js)
	f.Add(js[:len(js)/2])
	f.Add([]byte("{}"))
	f.Add(bytes.Replace(js, []byte(`"format_version": 1`), []byte(`"format_version": 2`), 1))
	f.Add(bytes.Replace(js, []byte(`"in": 51`), []byte(`"in": 50`), 1))
	f.Add(bytes.Replace(js, []byte(`"skill": 1`), []byte(`"skill": 9`), 1))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		edited := append([]member(nil), ms...)
		edited[0] = member{ManifestMember, manifest, zip.Store}
		raw := rezipRaw(t, edited)
		b, err := decode(raw)
		if err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted an invalid bank: %v", err)
		}
		back, err := decode(encode(t, b))
		if err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("accepted bank does not round-trip: %v", err)
		}
	})
}

// FuzzDecodeArray reaches the .npy parser directly: inside a bank it sits
// behind a SHA-256 check the fuzzer cannot forge.
func FuzzDecodeArray(f *testing.F) {
	for _, shape := range [][]int{{3}, {2, 3}, {1, 1}} {
		raw, err := encodeArray(shape, make([]float32, numElements(shape)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	// numpy's own header (format 1.0, shape written without a trailing comma).
	f.Add([]byte("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }" +
		string(bytes.Repeat([]byte(" "), 57)) + "\n\x00\x00\x80\x3f"))
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"))
	f.Add([]byte("\x93NUMPY\x01\x00\x05\x00{'x'}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		shape, data, err := decodeArray(raw)
		if err != nil {
			return
		}
		if len(data) != numElements(shape) {
			t.Fatalf("shape %v with %d values", shape, len(data))
		}
		again, err := encodeArray(shape, data)
		if err != nil {
			t.Fatal(err)
		}
		shape2, data2, err := decodeArray(again)
		if err != nil || !slices.Equal(shape, shape2) || !slices.Equal(bitsOf(data), bitsOf(data2)) {
			t.Fatalf("re-encoded array differs: %v", err)
		}
	})
}

func bitsOf(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}
