package npz

import (
	"archive/zip"
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// sample is an archive of a manifest, a float32 matrix, an int32 and a bool
// column.
func sample(t testing.TB) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Raw("manifest.json", []byte(`{"x": 1}`)); err != nil {
		t.Fatal(err)
	}
	if err := WriteArray(w, "f", []int{2, 3}, []float32{1, 2, 3, 4, 5, float32(math.Inf(-1))}); err != nil {
		t.Fatal(err)
	}
	if err := WriteArray(w, "i", []int{3}, []int32{-1, 0, 7}); err != nil {
		t.Fatal(err)
	}
	if err := WriteArray(w, "b", []int{4}, []bool{true, false, false, true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func open(t testing.TB, b []byte, lim Limits) (*Reader, error) {
	t.Helper()
	return NewReader(bytes.NewReader(b), int64(len(b)), lim)
}

func TestRoundTrip(t *testing.T) {
	good := sample(t)
	again := sample(t)
	if !bytes.Equal(good, again) {
		t.Fatal("equal contents gave different files")
	}
	rd, err := open(t, good, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b.npy", "f.npy", "i.npy", "manifest.json"}; !slices.Equal(rd.Names(), want) {
		t.Fatalf("members %v, want %v", rd.Names(), want)
	}
	js, err := rd.Raw("manifest.json", 100)
	if err != nil || string(js) != `{"x": 1}` {
		t.Fatalf("manifest %q, %v", js, err)
	}
	f, err := ReadArray[float32](rd, "f", []int{2, 3})
	if err != nil || f[4] != 5 || !math.IsInf(float64(f[5]), -1) {
		t.Fatalf("float32 array %v, %v", f, err)
	}
	i, err := ReadArray[int32](rd, "i", []int{3})
	if err != nil || !slices.Equal(i, []int32{-1, 0, 7}) {
		t.Fatalf("int32 array %v, %v", i, err)
	}
	b, err := ReadArray[bool](rd, "b", []int{4})
	if err != nil || !slices.Equal(b, []bool{true, false, false, true}) {
		t.Fatalf("bool array %v, %v", b, err)
	}
}

// TestReaderRefusesMalformedInput: each defect is a typed error, never a
// panic and never data.
func TestReaderRefusesMalformedInput(t *testing.T) {
	good := sample(t)
	read := func(lim Limits, b []byte) error {
		rd, err := open(t, b, lim)
		if err != nil {
			return err
		}
		if _, err := rd.Raw("manifest.json", 100); err != nil {
			return err
		}
		if _, err := ReadArray[float32](rd, "f", []int{2, 3}); err != nil {
			return err
		}
		_, err = ReadArray[int32](rd, "i", []int{3})
		return err
	}
	flipped := bytes.Clone(good)
	flipped[bytes.Index(good, []byte{0, 0, 0x80, 0x3f})+3] ^= 1 // a data byte of f
	rezip := func(edit func(name string, data []byte) (string, []byte)) []byte {
		zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, f := range zr.File {
			rc, _ := f.Open()
			var data bytes.Buffer
			_, _ = data.ReadFrom(rc)
			name, d := edit(f.Name, data.Bytes())
			if name == "" {
				continue
			}
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
			_, _ = w.Write(d)
		}
		_ = zw.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name string
		lim  Limits
		b    []byte
		want error
	}{
		{"empty", Limits{}, nil, ErrZip},
		{"not a zip", Limits{}, []byte("hello"), ErrZip},
		{"truncated", Limits{}, good[:len(good)/2], ErrZip},
		{"flipped data byte", Limits{}, flipped, ErrChecksum},
		{"file over the limit", Limits{MaxFileBytes: 100}, good, ErrTooLarge},
		{"too many members", Limits{MaxMembers: 3}, good, ErrTooLarge},
		{"member over the limit", Limits{MaxMemberBytes: 100}, good, ErrTooLarge},
		{"members over the total", Limits{MaxTotalBytes: 150}, good, ErrTooLarge},
		{"missing member", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return "", nil
			}
			return n, d
		}), ErrMissing},
		{"duplicate member", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "b.npy" {
				return "f.npy", d
			}
			return n, d
		}), ErrDuplicate},
		{"wrong dtype", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "i.npy" {
				return n, bytes.Replace(d, []byte("<i4"), []byte("<f4"), 1)
			}
			return n, d
		}), ErrNpy},
		{"wrong shape", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return n, bytes.Replace(d, []byte("(2, 3)"), []byte("(3, 2)"), 1)
			}
			return n, d
		}), ErrNpy},
		{"short data", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return n, d[:len(d)-1]
			}
			return n, d
		}), ErrNpy},
		{"trailing data", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return n, append(d, 0)
			}
			return n, d
		}), ErrNpy},
		{"big-endian", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return n, bytes.Replace(d, []byte("<f4"), []byte(">f4"), 1)
			}
			return n, d
		}), ErrNpy},
		{"Fortran order", Limits{}, rezip(func(n string, d []byte) (string, []byte) {
			if n == "f.npy" {
				return n, bytes.Replace(d, []byte("False"), []byte("True "), 1)
			}
			return n, d
		}), ErrNpy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := read(tc.lim, tc.b)
			t.Logf("%v", err)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeNpyAcceptsNumpysHeaders(t *testing.T) {
	// numpy's own headers: format 1.0 with the shape written without a
	// trailing comma, and format 2.0.
	v1 := "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }"
	raw1 := "\x93NUMPY\x01\x00\x76\x00" + v1 + strings.Repeat(" ", 118-len(v1)-1) + "\n\x00\x00\x80\x3f"
	v2 := "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
	raw2 := "\x93NUMPY\x02\x00\x74\x00\x00\x00" + v2 + strings.Repeat(" ", 116-len(v2)-1) + "\n\x01\x00\x00\x00\x02\x00\x00\x00"
	if shape, data, err := DecodeNpy[float32]([]byte(raw1)); err != nil || !slices.Equal(shape, []int{1, 1}) || data[0] != 1 {
		t.Errorf("format 1.0: %v %v %v", shape, data, err)
	}
	if shape, data, err := DecodeNpy[int32]([]byte(raw2)); err != nil || !slices.Equal(shape, []int{2}) || !slices.Equal(data, []int32{1, 2}) {
		t.Errorf("format 2.0: %v %v %v", shape, data, err)
	}
}

// FuzzDecodeNpy reaches the .npy parser directly (inside a bank it sits
// behind a SHA-256 check the fuzzer cannot forge): whatever it accepts
// re-encodes to the same values.
func FuzzDecodeNpy(f *testing.F) {
	for _, shape := range [][]int{{3}, {2, 3}, {1, 1}, {}} {
		var buf bytes.Buffer
		if err := EncodeNpy(&buf, shape, make([]float32, NumElements(shape))); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"))
	f.Add([]byte("\x93NUMPY\x01\x00\x05\x00{'x'}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		shape, data, err := DecodeNpy[float32](raw)
		if err != nil {
			if !errors.Is(err, ErrNpy) {
				t.Fatalf("error %v does not wrap ErrNpy", err)
			}
			return
		}
		if len(data) != NumElements(shape) {
			t.Fatalf("shape %v with %d values", shape, len(data))
		}
		var again bytes.Buffer
		if err := EncodeNpy(&again, shape, data); err != nil {
			t.Fatal(err)
		}
		shape2, data2, err := DecodeNpy[float32](again.Bytes())
		if err != nil || !slices.Equal(shape, shape2) || !slices.Equal(bitsOf(data), bitsOf(data2)) {
			t.Fatalf("re-encoded array differs: %v", err)
		}
	})
}

// FuzzReader: any bytes give members and arrays or typed errors, never a
// panic.
func FuzzReader(f *testing.F) {
	good := sample(f)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd, err := open(t, b, Limits{MaxMemberBytes: 1 << 20, MaxTotalBytes: 1 << 22})
		if err != nil {
			return
		}
		for _, name := range rd.Names() {
			_, _ = rd.Raw(name, 1<<16)
		}
		_, _ = ReadArray[float32](rd, "f", []int{2, 3})
		_, _ = ReadArray[bool](rd, "b", []int{4})
	})
}

func bitsOf(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}
