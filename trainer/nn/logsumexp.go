package nn

import "math"

// LogSumExp returns log(sum_i exp(x_i)) in float64, subtracting the maximum
// first so that nothing overflows (float32 exp overflows past about 88). It
// is -Inf for an empty x, and NaN if any x_i is NaN.
func LogSumExp[T Float](x []T) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if f != f {
			return math.NaN()
		}
		mx = max(mx, f)
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}

// LogMeanExp returns log((1/n) sum_i exp(x_i)), computed stably.
func LogMeanExp[T Float](x []T) float64 {
	return LogSumExp(x) - math.Log(float64(len(x)))
}

// Softmax writes exp(x_i) / sum_j exp(x_j) to out (len(x) values) and returns
// the log-sum-exp of x.
func Softmax[T Float](x []T, out []float64) float64 {
	lse := LogSumExp(x)
	for i, v := range x {
		out[i] = math.Exp(float64(v) - lse)
	}
	return lse
}
