package skills

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sbinet/npyio/npy"
)

// encodeArray writes a float32 array of rank 1 or 2 as .npy bytes. npyio
// writes the shape of the Go value, so a matrix is handed over as a slice of
// fixed-size rows built at run time (nested []float32 slices are not
// supported by npyio v0.9.0: it truncates the file after the header).
func encodeArray(shape []int, data []float32) ([]byte, error) {
	if err := checkShape(shape); err != nil {
		return nil, err
	}
	if len(data) != numElements(shape) {
		return nil, fmt.Errorf("%d values for shape %v", len(data), shape)
	}
	var v any = data
	if len(shape) == 2 {
		rows, cols := shape[0], shape[1]
		m := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(cols, reflect.TypeFor[float32]())), rows, rows)
		for r := range rows {
			reflect.Copy(m.Index(r).Slice(0, cols), reflect.ValueOf(data[r*cols:(r+1)*cols]))
		}
		v = m.Interface()
	}
	var buf bytes.Buffer
	if err := npy.Write(&buf, v); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	return buf.Bytes(), nil
}

// npyHeaderRE is the one header form accepted: numpy's own (keys sorted,
// trailing ", "), little-endian float32, C order. npyio's header parser slices
// at fixed offsets and panics on anything else, so nothing reaches it unless
// this matches.
var npyHeaderRE = regexp.MustCompile(`^\{'descr': '<f4', 'fortran_order': False, 'shape': \(((?:[0-9]{1,9}, )*[0-9]{1,9},?)\), \} *\n$`)

var errBadNpy = errors.New("not a little-endian float32 C-order .npy array")

// decodeArray parses .npy bytes strictly, bounding every size before it is
// allocated, then reads the data with npyio into a flat slice.
func decodeArray(raw []byte) (shape []int, data []float32, err error) {
	const magic = "\x93NUMPY"
	if len(raw) < len(magic)+4 || string(raw[:len(magic)]) != magic {
		return nil, nil, fmt.Errorf("%w: no npy magic", errBadNpy)
	}
	var hdrLen, start int
	switch raw[6] {
	case 1:
		hdrLen, start = int(binary.LittleEndian.Uint16(raw[8:])), 10
	case 2, 3:
		if len(raw) < 12 {
			return nil, nil, fmt.Errorf("%w: truncated header", errBadNpy)
		}
		hdrLen, start = int(binary.LittleEndian.Uint32(raw[8:])), 12
	default:
		return nil, nil, fmt.Errorf("%w: npy version %d.%d", errBadNpy, raw[6], raw[7])
	}
	if hdrLen > len(raw)-start || hdrLen > 1<<16 {
		return nil, nil, fmt.Errorf("%w: header length %d beyond the %d-byte member", errBadNpy, hdrLen, len(raw))
	}
	m := npyHeaderRE.FindSubmatch(raw[start : start+hdrLen])
	if m == nil {
		return nil, nil, fmt.Errorf("%w: header %q", errBadNpy, truncate(raw[start:start+hdrLen], 120))
	}
	for _, tok := range strings.Split(strings.TrimSuffix(string(m[1]), ","), ", ") {
		d, _ := strconv.Atoi(tok) // the pattern admits only digits
		shape = append(shape, d)
	}
	if err := checkShape(shape); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadNpy, err)
	}
	n := numElements(shape)
	if got := len(raw) - start - hdrLen; got != 4*n {
		return nil, nil, fmt.Errorf("%w: %d data bytes for shape %v, want %d", errBadNpy, got, shape, 4*n)
	}
	rd, err := npy.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadNpy, err)
	}
	if !slices.Equal(rd.Header.Descr.Shape, shape) {
		return nil, nil, fmt.Errorf("%w: npyio reads shape %v, header says %v", errBadNpy, rd.Header.Descr.Shape, shape)
	}
	data = make([]float32, n)
	if err := rd.Read(&data); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errBadNpy, err)
	}
	return shape, data, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
