package skills

import (
	"fmt"
	"math"

	"github.com/viterin/vek"
	"github.com/viterin/vek/vek32"
)

// Activation is a layer's elementwise nonlinearity. It marshals as its name.
type Activation uint8

// Activations. GELU is the exact (erf) form, PyTorch's default.
const (
	ActNone Activation = iota
	ActReLU
	ActTanh
	ActELU
	ActGELU
)

var activationNames = [...]string{ActNone: "none", ActReLU: "relu", ActTanh: "tanh", ActELU: "elu", ActGELU: "gelu"}

func (a Activation) String() string {
	if int(a) < len(activationNames) {
		return activationNames[a]
	}
	return fmt.Sprintf("Activation(%d)", a)
}

// MarshalText implements encoding.TextMarshaler.
func (a Activation) MarshalText() ([]byte, error) {
	if int(a) >= len(activationNames) {
		return nil, fmt.Errorf("skills: unknown activation %d", a)
	}
	return []byte(activationNames[a]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Activation) UnmarshalText(b []byte) error {
	for i, n := range activationNames {
		if n == string(b) {
			*a = Activation(i)
			return nil
		}
	}
	return fmt.Errorf("skills: unknown activation %q", b)
}

func (a Activation) apply(v float32) float32 {
	switch a {
	case ActReLU:
		return max(v, 0)
	case ActTanh:
		return float32(math.Tanh(float64(v)))
	case ActELU:
		if v > 0 {
			return v
		}
		return float32(math.Expm1(float64(v)))
	case ActGELU:
		return float32(0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2)))
	}
	return v
}

// Dense is one fully connected layer: y = Act(W x + B), W row-major Out x In.
type Dense struct {
	In, Out int
	W       []float32
	B       []float32
	Act     Activation
}

// MLP is a chain of dense layers.
type MLP struct {
	Layers []Dense
}

// Validate checks shapes, chaining, activations and finiteness.
func (m *MLP) Validate() error {
	if len(m.Layers) == 0 {
		return fmt.Errorf("mlp has no layers")
	}
	for i, l := range m.Layers {
		switch {
		case l.In <= 0 || l.Out <= 0 || l.In > maxLayerWidth || l.Out > maxLayerWidth:
			return fmt.Errorf("layer %d is %dx%d (each side must be 1..%d)", i, l.Out, l.In, maxLayerWidth)
		case len(l.W) != l.In*l.Out:
			return fmt.Errorf("layer %d: W has %d values, want %dx%d", i, len(l.W), l.Out, l.In)
		case len(l.B) != l.Out:
			return fmt.Errorf("layer %d: B has %d values, want %d", i, len(l.B), l.Out)
		case int(l.Act) >= len(activationNames):
			return fmt.Errorf("layer %d: unknown activation %d", i, l.Act)
		case i > 0 && l.In != m.Layers[i-1].Out:
			return fmt.Errorf("layer %d takes %d inputs, layer %d gives %d", i, l.In, i-1, m.Layers[i-1].Out)
		case !allFinite(l.W) || !allFinite(l.B):
			return fmt.Errorf("layer %d has NaN or Inf weights", i)
		}
	}
	return nil
}

// maxLayerWidth bounds layer sides so hostile shapes cannot make us allocate
// huge scratch buffers (a 4096x4096 float32 layer is already 64 MiB).
const maxLayerWidth = 1 << 12

// InDim and OutDim are the network's input and output sizes.
func (m *MLP) InDim() int  { return m.Layers[0].In }
func (m *MLP) OutDim() int { return m.Layers[len(m.Layers)-1].Out }

// Forward evaluation pads every weight row to a multiple of rowAlign floats
// with zero columns (and keeps the matching input tail at zero), so the SIMD
// dot kernel never runs its scalar remainder loop.
const rowAlign = 32

func alignUp(n int) int { return (n + rowAlign - 1) / rowAlign * rowAlign }

type plannedLayer struct {
	in, out, stride int
	w               []float32 // out x stride, zero padded
	b               []float32
	act             Activation
	y               []float32 // output, len alignUp(out); the tail stays zero
}

// matvec sets dst[i] = dot(w[i*len(x):(i+1)*len(x)], x) for every i.
type matvec func(dst, w, x []float32)

// Evaluator runs one MLP with preallocated scratch: Forward never allocates.
// It is not safe for concurrent use; make one per goroutine.
type Evaluator struct {
	layers []plannedLayer
	x      []float32
	mv     matvec
}

// NewEvaluator validates m and copies its weights into padded buffers.
func NewEvaluator(m MLP) (*Evaluator, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	e := &Evaluator{x: make([]float32, alignUp(m.InDim())), mv: defaultMatvec}
	for _, l := range m.Layers {
		p := plannedLayer{
			in: l.In, out: l.Out, stride: alignUp(l.In),
			b: append([]float32(nil), l.B...), act: l.Act,
			y: make([]float32, alignUp(l.Out)),
		}
		p.w = make([]float32, p.out*p.stride)
		for r := range l.Out {
			copy(p.w[r*p.stride:], l.W[r*l.In:(r+1)*l.In])
		}
		e.layers = append(e.layers, p)
	}
	return e, nil
}

// InDim and OutDim are the network's input and output sizes.
func (e *Evaluator) InDim() int  { return e.layers[0].in }
func (e *Evaluator) OutDim() int { return e.layers[len(e.layers)-1].out }

// Forward evaluates the network on x and returns its output, which stays
// valid until the next call.
func (e *Evaluator) Forward(x []float32) ([]float32, error) {
	if len(x) != e.InDim() {
		return nil, ErrDimMismatch
	}
	copy(e.x, x)
	return e.run(), nil
}

func (e *Evaluator) run() []float32 {
	in := e.x
	for i := range e.layers {
		l := &e.layers[i]
		y := l.y[:l.out]
		e.mv(y, l.w, in[:l.stride])
		for r, b := range l.b {
			y[r] = l.act.apply(y[r] + b)
		}
		in = l.y
	}
	return in[:e.OutDim()]
}

// defaultMatvec is vek's AVX2 kernel where vek accelerates, else the
// blocked Go loop (vek's own fallback is a single-accumulator loop, several
// times slower, and the robot's computer is arm64).
var defaultMatvec = func() matvec {
	if vek.Info().Acceleration {
		return matvecVek
	}
	return matvecGo
}()

// vekSerialMACs keeps each vek call under the size at which vek splits a
// matrix product across goroutines (which would allocate and contend with
// the control loop).
const vekSerialMACs = 99_999

func matvecVek(dst, w, x []float32) {
	n := len(x)
	rows := max(1, vekSerialMACs/n)
	for r := 0; r < len(dst); r += rows {
		e := min(r+rows, len(dst))
		vek32.MatMul_Into(dst[r:e], w[r*n:e*n], x, n)
	}
}

// matvecGo computes four rows at a time so each x[k] load feeds four
// independent accumulation chains.
func matvecGo(dst, w, x []float32) {
	n := len(x)
	r := 0
	for ; r+4 <= len(dst); r += 4 {
		w0, w1, w2, w3 := w[r*n:(r+1)*n], w[(r+1)*n:(r+2)*n], w[(r+2)*n:(r+3)*n], w[(r+3)*n:(r+4)*n]
		var s0, s1, s2, s3 float32
		for k, xk := range x {
			s0 += w0[k] * xk
			s1 += w1[k] * xk
			s2 += w2[k] * xk
			s3 += w3[k] * xk
		}
		dst[r], dst[r+1], dst[r+2], dst[r+3] = s0, s1, s2, s3
	}
	for ; r < len(dst); r++ {
		var s float32
		for k, wk := range w[r*n : (r+1)*n] {
			s += wk * x[k]
		}
		dst[r] = s
	}
}

// matmul sets dst (m x p) to x (m x n) times w (n x p), all row-major, with
// m = len(x)/n.
type matmul func(dst, x, w []float32, n, p int)

// defaultMatmul is the AVX2+FMA kernel where the CPU has it (amd64), else
// matmulGo.
var defaultMatmul = func() matmul {
	if asmMatmul != nil {
		return asmMatmul
	}
	return matmulGo
}()

// matmulGo accumulates output rows as sums of w's rows scaled by x's
// entries, four output rows at a time so each load of a w row feeds four
// accumulations, and the inner loops run over contiguous memory.
func matmulGo(dst, x, w []float32, n, p int) {
	m := len(x) / n
	clear(dst[:m*p])
	i := 0
	for ; i+4 <= m; i += 4 {
		d0, d1, d2, d3 := dst[i*p:(i+1)*p], dst[(i+1)*p:(i+2)*p], dst[(i+2)*p:(i+3)*p], dst[(i+3)*p:(i+4)*p]
		for k := range n {
			a0, a1, a2, a3 := x[i*n+k], x[(i+1)*n+k], x[(i+2)*n+k], x[(i+3)*n+k]
			wk := w[k*p : (k+1)*p]
			d0, d1, d2, d3 = d0[:len(wk)], d1[:len(wk)], d2[:len(wk)], d3[:len(wk)]
			for j, v := range wk {
				d0[j] += a0 * v
				d1[j] += a1 * v
				d2[j] += a2 * v
				d3[j] += a3 * v
			}
		}
	}
	for ; i < m; i++ {
		d := dst[i*p : (i+1)*p]
		for k, a := range x[i*n : (i+1)*n] {
			wk := w[k*p : (k+1)*p]
			wk = wk[:len(d)]
			for j, v := range wk {
				d[j] += a * v
			}
		}
	}
}
