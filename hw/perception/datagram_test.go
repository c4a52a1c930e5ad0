package perception_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/perception"
)

// sample is a datagram with a distinct value in every field.
func sample(seq uint64) perception.Datagram {
	d := perception.Datagram{
		Seq:      seq,
		Stamp:    time.Duration(seq)*20*time.Millisecond + 7,
		Position: [3]float64{1.25, -0.5, 0.235},
		Yaw:      -0.75,
	}
	for i := range d.Heights {
		d.Heights[i] = -0.235 + float32(i)/1000
	}
	return d
}

func encode(t testing.TB, d *perception.Datagram) []byte {
	t.Helper()
	buf := make([]byte, perception.Size)
	if err := d.Marshal(buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

// The layout is the one the package doc promises, byte for byte.
func TestLayout(t *testing.T) {
	if perception.Size != 540 {
		t.Fatalf("Size = %d, want 540", perception.Size)
	}
	d := sample(0x0102030405060708)
	b := encode(t, &d)
	le := binary.LittleEndian
	f64 := func(off int) float64 { return math.Float64frombits(le.Uint64(b[off:])) }
	checks := []struct {
		name      string
		got, want any
	}{
		{"magic", string(b[0:4]), "DFPM"},
		{"version", le.Uint16(b[4:]), uint16(1)},
		{"reserved", le.Uint16(b[6:]), uint16(0)},
		{"seq", le.Uint64(b[8:]), d.Seq},
		{"stamp", int64(le.Uint64(b[16:])), int64(d.Stamp)},
		{"x", f64(24), d.Position[0]},
		{"y", f64(32), d.Position[1]},
		{"z", f64(40), d.Position[2]},
		{"yaw", f64(48), d.Yaw},
		{"heights[0]", math.Float32frombits(le.Uint32(b[56:])), d.Heights[0]},
		{"heights[120]", math.Float32frombits(le.Uint32(b[56+4*120:])), d.Heights[120]},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	negZero := sample(1)
	negZero.Position[2] = math.Copysign(0, -1)
	extremes := sample(math.MaxUint64)
	extremes.Stamp = -1
	extremes.Heights[60] = math.MaxFloat32
	extremes.Heights[61] = -math.SmallestNonzeroFloat32
	for _, tc := range []struct {
		name string
		d    perception.Datagram
	}{
		{"zero", perception.Datagram{}},
		{"sample", sample(42)},
		{"negative zero", negZero},
		{"extremes", extremes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got perception.Datagram
			if err := got.Unmarshal(encode(t, &tc.d)); err != nil {
				t.Fatal(err)
			}
			if got != tc.d || math.Signbit(got.Position[2]) != math.Signbit(tc.d.Position[2]) {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.d)
			}
		})
	}
}

// Reserved bytes are ignored on receipt, so a later minor extension cannot break v1 receivers.
func TestReservedIgnored(t *testing.T) {
	d := sample(3)
	b := encode(t, &d)
	b[6], b[7] = 0xff, 0x01
	var got perception.Datagram
	if err := got.Unmarshal(b); err != nil || got != d {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestUnmarshalMalformed(t *testing.T) {
	good := sample(9)
	valid := encode(t, &good)
	with := func(edit func(b []byte)) []byte {
		b := append([]byte(nil), valid...)
		edit(b)
		return b
	}
	putF64 := func(off int, v float64) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint64(b[off:], math.Float64bits(v)) }
	}
	putF32 := func(off int, v float32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[off:], math.Float32bits(v)) }
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		want  error
		field string
		index int
	}{
		{"empty", nil, perception.ErrShort, "", 0},
		{"header only", valid[:8], perception.ErrShort, "", 0},
		{"one byte short", valid[:perception.Size-1], perception.ErrShort, "", 0},
		{"one byte long", append(append([]byte(nil), valid...), 0), perception.ErrLong, "", 0},
		{"a whole MTU", make([]byte, 1472), perception.ErrLong, "", 0},
		{"bad magic", with(func(b []byte) { b[0] = 'd' }), perception.ErrMagic, "", 0},
		{"master-board frame length", with(func(b []byte) { copy(b, []byte{0xff, 0xff, 0xff, 0xff}) }), perception.ErrMagic, "", 0},
		{"version 0", with(func(b []byte) { b[4] = 0 }), perception.ErrVersion, "", 0},
		{"version 2", with(func(b []byte) { b[4] = 2 }), perception.ErrVersion, "", 0},
		{"NaN x", with(putF64(24, math.NaN())), perception.ErrNonFinite, "position", 0},
		{"Inf z", with(putF64(40, math.Inf(1))), perception.ErrNonFinite, "position", 2},
		{"NaN yaw", with(putF64(48, math.NaN())), perception.ErrNonFinite, "yaw", 0},
		{"-Inf yaw", with(putF64(48, math.Inf(-1))), perception.ErrNonFinite, "yaw", 0},
		{"NaN first height", with(putF32(56, float32(math.NaN()))), perception.ErrNonFinite, "heights", 0},
		{"Inf last height", with(putF32(56+4*120, float32(math.Inf(1)))), perception.ErrNonFinite, "heights", 120},
		{"-Inf middle height", with(putF32(56+4*60, float32(math.Inf(-1)))), perception.ErrNonFinite, "heights", 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := sample(77)
			before := d
			err := d.Unmarshal(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var fe *perception.FormatError
			if !errors.As(err, &fe) || fe.Len != len(tc.in) || fe.Field != tc.field || fe.Index != tc.index {
				t.Fatalf("error %#v: want len %d, field %q[%d]", fe, len(tc.in), tc.field, tc.index)
			}
			if err.Error() == "" {
				t.Fatal("empty message")
			}
			if d != before {
				t.Fatal("a refused datagram changed the destination")
			}
		})
	}
}

func TestMarshalRefuses(t *testing.T) {
	nanHeight := sample(1)
	nanHeight.Heights[5] = float32(math.NaN())
	infX := sample(1)
	infX.Position[0] = math.Inf(-1)
	nanYaw := sample(1)
	nanYaw.Yaw = math.NaN()
	good := sample(1)
	for _, tc := range []struct {
		name string
		d    *perception.Datagram
		buf  int
		want error
	}{
		{"short buffer", &good, perception.Size - 1, perception.ErrShort},
		{"NaN height", &nanHeight, perception.Size, perception.ErrNonFinite},
		{"-Inf x", &infX, perception.Size, perception.ErrNonFinite},
		{"NaN yaw", &nanYaw, perception.Size, perception.ErrNonFinite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, tc.buf)
			for i := range buf {
				buf[i] = 0xaa
			}
			if err := tc.d.Marshal(buf); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for i, v := range buf {
				if v != 0xaa {
					t.Fatalf("byte %d written by a refused Marshal", i)
				}
			}
		})
	}
	// A longer buffer is fine: the datagram fills its first Size bytes.
	buf := make([]byte, perception.Size+10)
	if err := good.Marshal(buf); err != nil {
		t.Fatal(err)
	}
}

func TestCodecAllocatesNothing(t *testing.T) {
	d := sample(5)
	buf := make([]byte, perception.Size)
	var out perception.Datagram
	allocs := testing.AllocsPerRun(100, func() {
		if err := d.Marshal(buf); err != nil {
			t.Fatal(err)
		}
		if err := out.Unmarshal(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per encode+decode", allocs)
	}
}

func BenchmarkMarshal(b *testing.B) {
	d := sample(5)
	buf := make([]byte, perception.Size)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Marshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	d := sample(5)
	buf := encode(b, &d)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}
