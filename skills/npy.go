package skills

import (
	"bytes"
	"fmt"

	"github.com/dualforce/dualforce/skills/npz"
)

// encodeArray returns the .npy bytes of a float32 array of rank 1 or 2.
func encodeArray(shape []int, data []float32) ([]byte, error) {
	if err := checkShape(shape); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := npz.EncodeNpy(&buf, shape, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeArray parses the .npy bytes of a bank array: float32 of a shape
// checkShape accepts.
func decodeArray(raw []byte) (shape []int, data []float32, err error) {
	shape, data, err = npz.DecodeNpy[float32](raw)
	if err != nil {
		return nil, nil, err
	}
	if err := checkShape(shape); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", npz.ErrNpy, err)
	}
	return shape, data, nil
}
