package skills

import (
	"errors"
	"fmt"
	"math"
)

// DefaultNormEpsilon is the std floor used when none is given. Dataset
// dimensions that barely move (a joint held still, a flat height map) would
// otherwise be divided by ~0 and turn sensor noise at deployment into huge
// inputs; 0.01 in SI units is well below the spread of every moving signal.
const DefaultNormEpsilon = 1e-2

// Stats is a per-dimension mean and standard deviation. Standardising divides
// by max(Std, Epsilon).
type Stats struct {
	Mean    []float32 `json:"mean"`
	Std     []float32 `json:"std"`
	Epsilon float32   `json:"epsilon"`
	// Clip, when positive, clamps standardised values to [-Clip, Clip]: an input far outside
	// the data (a wall in the height map where the data only ever showed a low box: tens of
	// standard deviations) reaches the networks at the edge of what they were trained on.
	// 0 leaves values as they are.
	Clip float32 `json:"clip,omitempty"`
}

// IdentityStats returns stats that leave a dim-sized vector unchanged apart
// from the epsilon floor (which is below 1).
func IdentityStats(dim int) Stats {
	s := Stats{Mean: make([]float32, dim), Std: make([]float32, dim), Epsilon: DefaultNormEpsilon}
	for i := range s.Std {
		s.Std[i] = 1
	}
	return s
}

// FitStats computes the population mean and standard deviation of rows of
// dim floats stored back to back in data (float64 accumulation).
func FitStats(data []float32, dim int, epsilon float32) (Stats, error) {
	if dim <= 0 || len(data) == 0 || len(data)%dim != 0 {
		return Stats{}, fmt.Errorf("skills: FitStats: %d values do not form rows of %d", len(data), dim)
	}
	n := len(data) / dim
	sum := make([]float64, dim)
	for r := range n {
		for j, v := range data[r*dim : (r+1)*dim] {
			sum[j] += float64(v)
		}
	}
	s := Stats{Mean: make([]float32, dim), Std: make([]float32, dim), Epsilon: epsilon}
	sq := make([]float64, dim)
	for r := range n {
		for j, v := range data[r*dim : (r+1)*dim] {
			d := float64(v) - sum[j]/float64(n)
			sq[j] += d * d
		}
	}
	for j := range dim {
		s.Mean[j] = float32(sum[j] / float64(n))
		s.Std[j] = float32(math.Sqrt(sq[j] / float64(n)))
	}
	return s, s.Validate(dim)
}

// Validate checks sizes, finiteness, std >= 0 and epsilon > 0.
func (s Stats) Validate(dim int) error {
	if len(s.Mean) != dim || len(s.Std) != dim {
		return fmt.Errorf("stats have %d means and %d stds, want %d", len(s.Mean), len(s.Std), dim)
	}
	if !(s.Epsilon > 0) || !finite32(s.Epsilon) {
		return fmt.Errorf("stats epsilon %v must be positive and finite", s.Epsilon)
	}
	if !(s.Clip >= 0) || !finite32(s.Clip) {
		return fmt.Errorf("stats clip %v must be 0 (none) or positive and finite", s.Clip)
	}
	for i := range dim {
		if !finite32(s.Mean[i]) || !finite32(s.Std[i]) || s.Std[i] < 0 {
			return fmt.Errorf("stats dim %d: mean %v std %v (want finite, std >= 0)", i, s.Mean[i], s.Std[i])
		}
	}
	return nil
}

// Normaliser standardises vectors in place: x = (x - mean) / max(std, eps), clamped to
// [-clip, clip] when the stats set a clip.
type Normaliser struct {
	mean, invStd []float32
	clip         float32
}

// ErrDimMismatch reports a vector of the wrong length on the control path.
var ErrDimMismatch = errors.New("skills: vector length mismatch")

// NewNormaliser precomputes 1/max(std, eps).
func NewNormaliser(s Stats) (*Normaliser, error) {
	if err := s.Validate(len(s.Mean)); err != nil {
		return nil, fmt.Errorf("skills: normaliser: %w", err)
	}
	n := &Normaliser{mean: append([]float32(nil), s.Mean...), invStd: make([]float32, len(s.Std)), clip: s.Clip}
	for i, sd := range s.Std {
		n.invStd[i] = 1 / max(sd, s.Epsilon)
	}
	return n, nil
}

// Dim is the vector size the normaliser expects.
func (n *Normaliser) Dim() int { return len(n.mean) }

// Apply standardises x in place.
func (n *Normaliser) Apply(x []float32) error {
	if len(x) != len(n.mean) {
		return ErrDimMismatch
	}
	mean, invStd := n.mean[:len(x)], n.invStd[:len(x)]
	for i := range x {
		x[i] = (x[i] - mean[i]) * invStd[i]
	}
	if c := n.clip; c > 0 {
		for i, v := range x {
			x[i] = min(max(v, -c), c)
		}
	}
	return nil
}

// float32 NaN and Inf are exactly the values with an all-ones exponent.
const exponentMask32 = 0x7f800000

func finite32(v float32) bool { return math.Float32bits(v)&exponentMask32 != exponentMask32 }

func allFinite(x []float32) bool {
	for _, v := range x {
		if math.Float32bits(v)&exponentMask32 == exponentMask32 {
			return false
		}
	}
	return true
}
