package skills

import (
	"bytes"
	"fmt"

	"github.com/dualforce/dualforce/skills/npz"
)

// dtypeOf names the element type of a bank array's data ([]float32,
// []float64 or []int32); it returns "" for anything else.
func dtypeOf(data any) string {
	switch data.(type) {
	case []float32:
		return npz.DtypeFloat32
	case []float64:
		return npz.DtypeFloat64
	case []int32:
		return npz.DtypeInt32
	}
	return ""
}

// encodeArray returns the .npy bytes of a bank array: a []float32,
// []float64 or []int32 of a shape checkShape accepts.
func encodeArray(shape []int, data any) ([]byte, error) {
	if err := checkShape(shape); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	var err error
	switch x := data.(type) {
	case []float32:
		err = npz.EncodeNpy(&buf, shape, x)
	case []float64:
		err = npz.EncodeNpy(&buf, shape, x)
	case []int32:
		err = npz.EncodeNpy(&buf, shape, x)
	default:
		err = fmt.Errorf("element type %T, want []float32, []float64 or []int32", data)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeArray parses the .npy bytes of a bank array of the given dtype, of
// a shape checkShape accepts.
func decodeArray(raw []byte, dtype string) (shape []int, data any, err error) {
	switch dtype {
	case npz.DtypeFloat32:
		shape, data, err = decodeAs[float32](raw)
	case npz.DtypeFloat64:
		shape, data, err = decodeAs[float64](raw)
	case npz.DtypeInt32:
		shape, data, err = decodeAs[int32](raw)
	default:
		return nil, nil, fmt.Errorf("%w: dtype %q is not a bank array's", npz.ErrNpy, dtype)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkShape(shape); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", npz.ErrNpy, err)
	}
	return shape, data, nil
}

func decodeAs[T npz.Element](raw []byte) ([]int, any, error) {
	shape, data, err := npz.DecodeNpy[T](raw)
	return shape, data, err
}
