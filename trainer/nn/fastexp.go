package nn

import (
	"math"
	"unsafe"

	"github.com/viterin/vek/vek32"
)

// expLo and expHi bound expSlice's float32 inputs: e^x is a normal float32
// on [expLo, expHi], and vek's kernel is wrong outside its range (it gives
// e^-100 as a large negative number and e^NaN as 0).
const (
	expLo = -87
	expHi = 88
)

// expSlice replaces every element x of xs by e^x: for float32 (training) by
// vek's AVX2 kernel (8 at a time, relative error below 1e-7 on [expLo,
// expHi]) on inputs clamped to that range, so e^x below it is about 1.6e-38
// instead of 0 and above it about 1.7e38 instead of +Inf, which the
// activations built on it (tanh, softplus, softmax) saturate through alike;
// a slice holding a NaN is done in float64 so the NaN survives. For float64
// (gradient checks), the exact math.Exp.
func expSlice[T Float](xs []T) {
	if len(xs) == 0 {
		return
	}
	if unsafe.Sizeof(xs[0]) != 4 {
		for i, v := range xs {
			xs[i] = T(math.Exp(float64(v)))
		}
		return
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&xs[0])), len(xs))
	nan := false
	for i, v := range f {
		nan = nan || v != v
		f[i] = min(max(v, expLo), expHi)
	}
	if nan {
		for i, v := range f {
			f[i] = float32(math.Exp(float64(v)))
		}
		return
	}
	vek32.Exp_Inplace(f)
}
