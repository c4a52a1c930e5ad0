package npz

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
)

// Element is a Go type an array may hold.
type Element interface {
	float32 | float64 | int32 | bool
}

// The dtypes of the Element types, as numpy spells them.
const (
	DtypeFloat32 = "<f4"
	DtypeFloat64 = "<f8"
	DtypeInt32   = "<i4"
	DtypeBool    = "|b1"
)

// Dtype returns T's numpy dtype and its size in bytes.
func Dtype[T Element]() (string, int) {
	var zero T
	switch any(zero).(type) {
	case float32:
		return DtypeFloat32, 4
	case float64:
		return DtypeFloat64, 8
	case int32:
		return DtypeInt32, 4
	}
	return DtypeBool, 1
}

const (
	npyMagic = "\x93NUMPY"
	// npyAlign is where numpy starts the data: the preamble is padded to a
	// multiple of 64 bytes.
	npyAlign = 64
	// maxHeaderLen bounds the header a reader accepts (numpy's own stay
	// under 200 bytes).
	maxHeaderLen = 4096
	// maxRank bounds the dimensions of an array.
	maxRank = 8
)

// ErrNpy reports an array member that is not a .npy array of the expected
// dtype and shape.
var ErrNpy = errors.New("npz: bad .npy array")

// NumElements is the number of values of an array of the given shape.
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// header returns the .npy v1.0 preamble of an array: magic, version, header
// length and the header dict, space-padded and newline-terminated so that
// the data is 64-byte aligned.
func header(dtype string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, tuple)
	pre := len(npyMagic) + 4
	pad := (npyAlign - (pre+len(dict)+1)%npyAlign) % npyAlign
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(dict)+pad+1))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes()
}

// EncodeNpy streams data as one .npy array of the given shape into w, in
// chunks, without copying the array.
func EncodeNpy[T Element](w io.Writer, shape []int, data []T) error {
	if len(shape) > maxRank {
		return fmt.Errorf("%w: rank %d", ErrNpy, len(shape))
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("%w: shape %v", ErrNpy, shape)
		}
	}
	if n := NumElements(shape); n != len(data) {
		return fmt.Errorf("%w: %d values for shape %v", ErrNpy, len(data), shape)
	}
	dtype, size := Dtype[T]()
	if _, err := w.Write(header(dtype, shape)); err != nil {
		return err
	}
	const chunk = 1 << 14
	buf := make([]byte, 0, chunk*size)
	for start := 0; start < len(data); start += chunk {
		buf = buf[:0]
		for _, v := range data[start:min(start+chunk, len(data))] {
			switch v := any(v).(type) {
			case float32:
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			case float64:
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			case int32:
				buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			case bool:
				b := byte(0)
				if v {
					b = 1
				}
				buf = append(buf, b)
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// headerRE is the one header form accepted: numpy's own (keys sorted, C
// order), a dtype of an Element type, and a shape of up to maxRank
// dimensions (a rank-1 shape keeps its trailing comma; numpy writes none
// after the last of several). npyio's header parser slices at fixed offsets
// and panics on anything else, so nothing reaches it unless this matches.
var headerRE = regexp.MustCompile(`^\{'descr': '(<f4|<f8|<i4|\|b1)', 'fortran_order': False, 'shape': \(((?:[0-9]{1,10}, ){0,7}[0-9]{1,10},?)?\), \} *\n$`)

// readPreamble reads and checks an .npy preamble, returning it (to hand to
// npyio), the dtype and the shape.
func readPreamble(r io.Reader) (pre []byte, dtype string, shape []int, err error) {
	fixed := make([]byte, len(npyMagic)+4)
	if _, err := io.ReadFull(r, fixed[:len(npyMagic)+2]); err != nil {
		return nil, "", nil, fmt.Errorf("truncated .npy preamble: %w", err)
	}
	if string(fixed[:len(npyMagic)]) != npyMagic {
		return nil, "", nil, errors.New("no .npy magic")
	}
	var n int
	switch fixed[6] {
	case 1:
		if _, err := io.ReadFull(r, fixed[8:10]); err != nil {
			return nil, "", nil, fmt.Errorf("truncated .npy preamble: %w", err)
		}
		n = int(binary.LittleEndian.Uint16(fixed[8:]))
	case 2, 3:
		fixed = append(fixed, 0, 0)
		if _, err := io.ReadFull(r, fixed[8:12]); err != nil {
			return nil, "", nil, fmt.Errorf("truncated .npy preamble: %w", err)
		}
		n = int(binary.LittleEndian.Uint32(fixed[8:]))
	default:
		return nil, "", nil, fmt.Errorf(".npy version %d.%d", fixed[6], fixed[7])
	}
	if n > maxHeaderLen {
		return nil, "", nil, fmt.Errorf(".npy header of %d bytes", n)
	}
	pre = append(fixed, make([]byte, n)...)
	if _, err := io.ReadFull(r, pre[len(fixed):]); err != nil {
		return nil, "", nil, fmt.Errorf("truncated .npy header: %w", err)
	}
	m := headerRE.FindSubmatch(pre[len(fixed):])
	if m == nil {
		return nil, "", nil, fmt.Errorf("unsupported .npy header %q", truncate(pre[len(fixed):], 120))
	}
	shape = []int{}
	if dims := strings.TrimSuffix(string(m[2]), ","); dims != "" {
		for _, tok := range strings.Split(dims, ", ") {
			d, err := strconv.Atoi(tok)
			if err != nil || d > math.MaxInt32 {
				return nil, "", nil, fmt.Errorf("dimension %q", tok)
			}
			shape = append(shape, d)
		}
	}
	return pre, string(m[1]), shape, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// decodeNpy reads one .npy array of T from r, which holds exactly size
// bytes. want, when not nil, is the only shape accepted. The data's length
// is checked against size before anything is allocated, and r is read to
// its end.
func decodeNpy[T Element](r *bufio.Reader, size uint64, want []int) ([]int, []T, error) {
	pre, dtype, shape, err := readPreamble(r)
	if err != nil {
		return nil, nil, err
	}
	wantDtype, elem := Dtype[T]()
	if dtype != wantDtype || want != nil && !equalInts(shape, want) {
		if want == nil {
			want = shape
		}
		return nil, nil, fmt.Errorf("array is %s %v, want %s %v", dtype, shape, wantDtype, want)
	}
	if uint64(len(pre)) > size {
		return nil, nil, fmt.Errorf("member of %d bytes is shorter than its %d-byte header", size, len(pre))
	}
	// n could overflow for several large dimensions: check it against the
	// data bytes by division as it grows.
	data := size - uint64(len(pre))
	n := uint64(1)
	for _, d := range shape {
		if d != 0 && n > data/uint64(d) {
			return nil, nil, fmt.Errorf("shape %v needs more than the member's %d data bytes", shape, data)
		}
		n *= uint64(d)
	}
	if n*uint64(elem) != data {
		return nil, nil, fmt.Errorf("member holds %d bytes, a %s array of shape %v needs %d", size, dtype, shape, uint64(len(pre))+n*uint64(elem))
	}
	rd, err := npy.NewReader(io.MultiReader(bytes.NewReader(pre), r))
	if err != nil {
		return nil, nil, err
	}
	out := make([]T, n)
	if n > 0 {
		if err := rd.Read(&out); err != nil {
			return nil, nil, err
		}
	}
	// npyio stops after the last element and takes a clean end of stream
	// for zeros: reading one more byte proves the data was all there and
	// makes the zip reader check the CRC.
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("trailing bytes after the array")
		}
		return nil, nil, err
	}
	return shape, out, nil
}

// DecodeNpy parses the bytes of one .npy array of T (any shape).
func DecodeNpy[T Element](raw []byte) (shape []int, data []T, err error) {
	br := bufio.NewReaderSize(bytes.NewReader(raw), 4096)
	shape, data, err = decodeNpy[T](br, uint64(len(raw)), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNpy, err)
	}
	return shape, data, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
