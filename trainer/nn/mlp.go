package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"
)

// Activation is the element-wise function a Dense layer applies after its
// affine map.
type Activation uint8

// The activations of Dense layers.
const (
	Identity Activation = iota
	ReLU
	Tanh
)

func (a Activation) String() string {
	switch a {
	case Identity:
		return "identity"
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	default:
		return fmt.Sprintf("Activation(%d)", int(a))
	}
}

// ErrShape reports a network or batch of impossible shape.
var ErrShape = errors.New("nn: bad shape")

// Dense is one layer y = Act(W x + b). W is row-major Out x In. W, B, GW and
// GB are views into the parameter and gradient slabs of the owning MLP.
type Dense[T Float] struct {
	In, Out int
	Act     Activation
	W, B    []T
	GW, GB  []T
}

// MLP is a stack of Dense layers whose parameters live in one contiguous slab
// (layer by layer, W then B), so that optimisers and exporters see a single
// vector.
type MLP[T Float] struct {
	Layers []Dense[T]
	params []T
	grads  []T
}

// NewMLP builds the network sizes[0] -> sizes[1] -> ... -> sizes[n-1] with
// the hidden activation on every layer but the last, which gets output. The
// initialisation is PyTorch's nn.Linear default: W and b uniform in
// +-1/sqrt(fan_in), drawn from rng.
func NewMLP[T Float](rng *rand.Rand, sizes []int, hidden, output Activation) (*MLP[T], error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("%w: an MLP needs at least input and output sizes, got %v", ErrShape, sizes)
	}
	total := 0
	for i, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("%w: layer width %d at position %d", ErrShape, s, i)
		}
		if i > 0 {
			total += sizes[i-1]*s + s
		}
	}
	for _, a := range []Activation{hidden, output} {
		if a > Tanh {
			return nil, fmt.Errorf("nn: unknown activation %v", a)
		}
	}
	m := &MLP[T]{
		Layers: make([]Dense[T], len(sizes)-1),
		params: make([]T, total),
		grads:  make([]T, total),
	}
	off := 0
	for l := range m.Layers {
		in, out := sizes[l], sizes[l+1]
		act := hidden
		if l == len(m.Layers)-1 {
			act = output
		}
		d := &m.Layers[l]
		d.In, d.Out, d.Act = in, out, act
		d.W, d.GW = m.params[off:off+in*out], m.grads[off:off+in*out]
		off += in * out
		d.B, d.GB = m.params[off:off+out], m.grads[off:off+out]
		off += out
		bound := 1 / math.Sqrt(float64(in))
		for i := range d.W {
			d.W[i] = T(bound * (2*rng.Float64() - 1))
		}
		for i := range d.B {
			d.B[i] = T(bound * (2*rng.Float64() - 1))
		}
	}
	return m, nil
}

// InDim is the width of the network's input.
func (m *MLP[T]) InDim() int { return m.Layers[0].In }

// OutDim is the width of the network's output.
func (m *MLP[T]) OutDim() int { return m.Layers[len(m.Layers)-1].Out }

// Params is the parameter slab. Writing to it changes the network.
func (m *MLP[T]) Params() []T { return m.params }

// Grads is the gradient slab, laid out like Params. Backward adds to it.
func (m *MLP[T]) Grads() []T { return m.grads }

// ZeroGrad clears the accumulated gradients.
func (m *MLP[T]) ZeroGrad() { clear(m.grads) }

// Tape holds what one forward pass needs to be differentiated: the input it
// saw and every layer's output. A tape grows to the largest batch it has seen
// and then never allocates again. Use one tape per batch that is in flight.
type Tape[T Float] struct {
	rows   int
	in     []T
	outs   [][]T
	ones   []T
	dA, dB []T
}

// Rows is the number of rows of the last forward pass.
func (tp *Tape[T]) Rows() int { return tp.rows }

// Input is the input of the last forward pass (the caller's slice).
func (tp *Tape[T]) Input() []T { return tp.in }

// Output returns the output of layer l (rows x Layers[l].Out) from the last
// forward pass.
func (tp *Tape[T]) Output(l int) []T { return tp.outs[l] }

func grow[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Forward runs the network on x (rows x InDim), records the pass on tp and
// returns the output (rows x OutDim), a view into tp valid until its next
// use. x must stay unchanged until Backward.
func (m *MLP[T]) Forward(tp *Tape[T], x []T, rows int) []T {
	if len(x) < rows*m.InDim() {
		panic(fmt.Sprintf("nn: Forward input has %d values, want %d rows x %d", len(x), rows, m.InDim()))
	}
	if len(tp.outs) != len(m.Layers) {
		tp.outs = make([][]T, len(m.Layers))
	}
	tp.rows, tp.in = rows, x[:rows*m.InDim()]
	in := tp.in
	for l := range m.Layers {
		d := &m.Layers[l]
		out := grow(tp.outs[l], rows*d.Out)
		tp.outs[l] = out
		Gemm(false, true, rows, d.Out, d.In, 1, in, d.W, 0, out)
		biasActivate(out, d.B, d.Act)
		in = out
	}
	return in
}

func biasActivate[T Float](out, b []T, act Activation) {
	n := len(b)
	for r := 0; r < len(out); r += n {
		row := out[r : r+n]
		switch act {
		case Identity:
			for j, bj := range b {
				row[j] += bj
			}
		case ReLU:
			for j, bj := range b {
				row[j] = max(row[j]+bj, 0)
			}
		case Tanh:
			for j, bj := range b {
				row[j] = T(math.Tanh(float64(row[j] + bj)))
			}
		}
	}
}

// scaleByDerivative multiplies g element-wise by Act'(pre-activation),
// expressed through the layer's output y.
func scaleByDerivative[T Float](g, y []T, act Activation) {
	switch act {
	case ReLU:
		var zero T
		if unsafe.Sizeof(zero) == 4 {
			reluGrad32(as32(g), as32(y))
		} else {
			reluGrad64(as64(g), as64(y))
		}
	case Tanh:
		for i, yi := range y {
			g[i] *= 1 - yi*yi
		}
	}
}

// Backward back-propagates dOut, the gradient of a loss with respect to the
// output of the forward pass recorded on tp, and ADDS the parameter gradients
// to Grads. If dX is not nil it receives the gradient with respect to the
// input (rows x InDim).
func (m *MLP[T]) Backward(tp *Tape[T], dOut, dX []T) {
	m.BackwardWith(tp, dOut, nil, dX)
}

// BackwardWith is Backward for a loss that also reads hidden layers directly:
// extra[l], when present and not nil, is the gradient of the loss with respect
// to the output of layer l (rows x Layers[l].Out) through paths other than
// the layers above it. dOut may be nil for a loss that does not read the
// output.
func (m *MLP[T]) BackwardWith(tp *Tape[T], dOut []T, extra [][]T, dX []T) {
	rows, last := tp.rows, len(m.Layers)-1
	maxW := 0
	for _, d := range m.Layers {
		maxW = max(maxW, d.In, d.Out)
	}
	tp.dA, tp.dB = grow(tp.dA, rows*maxW), grow(tp.dB, rows*maxW)
	if len(tp.ones) < rows {
		tp.ones = make([]T, rows)
		for i := range tp.ones {
			tp.ones[i] = 1
		}
	}
	g := tp.dA[:rows*m.Layers[last].Out]
	if dOut != nil {
		copy(g, dOut[:len(g)])
	} else {
		clear(g)
	}
	if last < len(extra) && extra[last] != nil {
		addTo(g, extra[last])
	}
	scaleByDerivative(g, tp.outs[last], m.Layers[last].Act)
	next := tp.dB
	for l := last; l >= 0; l-- {
		d := &m.Layers[l]
		in := tp.in
		if l > 0 {
			in = tp.outs[l-1]
		}
		Gemm(true, false, d.Out, d.In, rows, 1, g, in, 1, d.GW)
		Gemm(false, false, 1, d.Out, rows, 1, tp.ones[:rows], g, 1, d.GB)
		switch {
		case l > 0:
			gIn := next[:rows*d.In]
			Gemm(false, false, rows, d.In, d.Out, 1, g, d.W, 0, gIn)
			if l-1 < len(extra) && extra[l-1] != nil {
				addTo(gIn, extra[l-1])
			}
			scaleByDerivative(gIn, tp.outs[l-1], m.Layers[l-1].Act)
			g, next = gIn, g[:cap(g)]
		case dX != nil:
			Gemm(false, false, rows, d.In, d.Out, 1, g, d.W, 0, dX[:rows*d.In])
		}
	}
}

// reluGrad32 and reluGrad64 zero g where the ReLU output y is 0. ReLU
// outputs are +0 or positive, so an integer test on the bits decides, and
// selecting integers compiles to a conditional move: the signs of a layer's
// pre-activations are random and a branch here mispredicts half the time.
func reluGrad32(g, y []float32) {
	y = y[:len(g)]
	for i, yi := range y {
		b := math.Float32bits(g[i])
		if math.Float32bits(yi) == 0 {
			b = 0
		}
		g[i] = math.Float32frombits(b)
	}
}

func reluGrad64(g, y []float64) {
	y = y[:len(g)]
	for i, yi := range y {
		b := math.Float64bits(g[i])
		if math.Float64bits(yi) == 0 {
			b = 0
		}
		g[i] = math.Float64frombits(b)
	}
}

func addTo[T Float](dst, src []T) {
	for i := range dst {
		dst[i] += src[i]
	}
}
