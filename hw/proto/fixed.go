package proto

import "math"

// Fixed-point conversions. Encoding multiplies by 2^q, truncates toward zero like the SDK's C
// casts, and saturates at the symmetric limits of the type (+-32767, +-127, +-2147483647) rather
// than wrapping. The bool result reports saturation.

func toQ32(x float64, q uint) (int32, bool) {
	v := x * float64(uint64(1)<<q)
	switch {
	case v >= math.MaxInt32:
		return math.MaxInt32, v > math.MaxInt32
	case v <= -math.MaxInt32:
		return -math.MaxInt32, v < -math.MaxInt32
	}
	return int32(v), false
}

func toQ16(x float64, q uint) (int16, bool) {
	v := x * float64(uint64(1)<<q)
	switch {
	case v >= math.MaxInt16:
		return math.MaxInt16, v > math.MaxInt16
	case v <= -math.MaxInt16:
		return -math.MaxInt16, v < -math.MaxInt16
	}
	return int16(v), false
}

func toQ8(x float64, q uint) (int8, bool) {
	v := x * float64(uint64(1)<<q)
	switch {
	case v >= math.MaxInt8:
		return math.MaxInt8, v > math.MaxInt8
	case v <= -math.MaxInt8:
		return -math.MaxInt8, v < -math.MaxInt8
	}
	return int8(v), false
}

func toUQ16(x float64, q uint) (uint16, bool) {
	v := x * float64(uint64(1)<<q)
	switch {
	case v >= math.MaxUint16:
		return math.MaxUint16, v > math.MaxUint16
	case v <= 0:
		return 0, v < 0
	}
	return uint16(v), false
}

func fromQ(v int64, q uint) float64 { return float64(v) / float64(uint64(1)<<q) }

// Unit factors between SI on the motor side and the wire's units.
const (
	radPerTurn     = 2 * math.Pi
	radPerSPerKrpm = 2 * math.Pi * 1000 / 60 // rad/s in one krpm
	// StandardGravity converts the accelerometer's g to m/s^2.
	StandardGravity = 9.80665
	vbusScale       = 3.125e-3
	ishuntScale     = 1.25e-3
	energyScale     = 3.125e-3 * 5e-6 / 4e-3
)
