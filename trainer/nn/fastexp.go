package nn

import (
	"math"
	"unsafe"
)

// exp32 is e^x in float32 arithmetic: x = n ln2 + r with |r| <= ln2/2,
// e^r by its degree-6 Taylor polynomial (error below 2e-7 relative), and
// 2^n put into the exponent bits. It is several times faster than
// math.Exp, which works in float64. Below -87.3 it returns 0 (float32
// denormals are not worth their cost here), above 88.7 +Inf.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	case x != x:
		return x
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	k := int32(n)
	if k > 127 { // 2^128 is not a float32; p < 1.42, so p*2 * 2^127 still is
		p, k = p*2, k-1
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// expT is e^x for the element type: exp32 for float32 (training), the
// exact math.Exp for float64 (gradient checks).
func expT[T Float](x T) T {
	if unsafe.Sizeof(x) == 4 {
		return T(exp32(float32(x)))
	}
	return T(math.Exp(float64(x)))
}
