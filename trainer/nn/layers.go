package nn

import "math"

// The layers below are the blocks of set encoders and residual MLPs (the FRE
// encoder and decoder). Each layer owns its parameters (views into an Arena)
// and the buffers of ONE forward pass in flight: Forward records what
// Backward needs and returns a view into the layer's own output buffer,
// valid until the layer's next Forward; Backward adds the parameter
// gradients to the arena's gradient slab and returns the gradient with
// respect to the input, a view valid until the layer's next Backward.
// Buffers grow to the largest batch seen and are then reused, so a training
// step allocates nothing after the first one. Matrices are row-major,
// rows x width.

// Linear is y = x W + b with W stored In x Out (the bank's convention).
type Linear[T Float] struct {
	In, Out int
	W, B    *Param[T]
	x       []T
	rows    int
	y, dx   []T
}

// NewLinear registers the kernel wName (In x Out) and the bias bName (Out)
// on a.
func NewLinear[T Float](a *Arena[T], wName, bName string, in, out int, wInit, bInit Init) *Linear[T] {
	return &Linear[T]{
		In: in, Out: out,
		W: a.New(wName, wInit, in, out),
		B: a.New(bName, bInit, out),
	}
}

// Forward computes y for x (rows x In); x must stay unchanged until Backward.
func (l *Linear[T]) Forward(x []T, rows int) []T {
	l.x, l.rows = x[:rows*l.In], rows
	l.y = grow(l.y, rows*l.Out)
	b := l.B.W
	for r := 0; r < len(l.y); r += l.Out {
		copy(l.y[r:r+l.Out], b)
	}
	Gemm(false, false, rows, l.Out, l.In, 1, l.x, l.W.W, 1, l.y)
	return l.y
}

// Backward adds dL/dW and dL/db for dy (rows x Out) and returns dL/dx, or
// nil without wantDX.
func (l *Linear[T]) Backward(dy []T, wantDX bool) []T {
	rows := l.rows
	dy = dy[:rows*l.Out]
	Gemm(true, false, l.In, l.Out, rows, 1, l.x, dy, 1, l.W.G)
	gb := l.B.G
	for r := 0; r < len(dy); r += l.Out {
		addTo(gb, dy[r:r+l.Out])
	}
	if !wantDX {
		return nil
	}
	l.dx = grow(l.dx, rows*l.In)
	Gemm(false, true, rows, l.In, l.Out, 1, dy, l.W.W, 0, l.dx)
	return l.dx
}

// LayerNormEps is the variance floor of LayerNorm (PyTorch's and flax's
// default).
const LayerNormEps = 1e-5

// LayerNorm normalises every row to zero mean and unit (biased) variance,
// then scales by Gamma and shifts by Beta.
type LayerNorm[T Float] struct {
	Width       int
	Gamma, Beta *Param[T]
	xhat, rstd  []T
	y, dx       []T
}

// NewLayerNorm registers name+"/gamma" (ones) and name+"/beta" (zeros).
func NewLayerNorm[T Float](a *Arena[T], name string, width int) *LayerNorm[T] {
	return &LayerNorm[T]{
		Width: width,
		Gamma: a.New(name+"/gamma", Ones, width),
		Beta:  a.New(name+"/beta", Zeros, width),
	}
}

// Forward normalises x (rows x Width).
func (n *LayerNorm[T]) Forward(x []T, rows int) []T {
	w := n.Width
	n.xhat, n.rstd, n.y = grow(n.xhat, rows*w), grow(n.rstd, rows), grow(n.y, rows*w)
	g, b := n.Gamma.W, n.Beta.W
	for r := range rows {
		in := x[r*w : (r+1)*w]
		mean := 0.0
		for _, v := range in {
			mean += float64(v)
		}
		mean /= float64(w)
		variance := 0.0
		for _, v := range in {
			d := float64(v) - mean
			variance += d * d
		}
		rstd := 1 / math.Sqrt(variance/float64(w)+LayerNormEps)
		n.rstd[r] = T(rstd)
		xh, y := n.xhat[r*w:(r+1)*w], n.y[r*w:(r+1)*w]
		for j, v := range in {
			h := T((float64(v) - mean) * rstd)
			xh[j] = h
			y[j] = g[j]*h + b[j]
		}
	}
	return n.y
}

// Backward adds dL/dGamma and dL/dBeta and returns dL/dx.
func (n *LayerNorm[T]) Backward(dy []T) []T {
	w, rows := n.Width, len(n.rstd)
	n.dx = grow(n.dx, rows*w)
	g, gg, gb := n.Gamma.W, n.Gamma.G, n.Beta.G
	inv := 1 / float64(w)
	for r := range rows {
		d, xh, dx := dy[r*w:(r+1)*w], n.xhat[r*w:(r+1)*w], n.dx[r*w:(r+1)*w]
		// dxhat = dy * gamma; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
		var sum, dot float64
		for j, v := range d {
			gg[j] += v * xh[j]
			gb[j] += v
			dh := float64(v * g[j])
			sum += dh
			dot += dh * float64(xh[j])
		}
		sum *= inv
		dot *= inv
		rstd := float64(n.rstd[r])
		for j, v := range d {
			dx[j] = T(rstd * (float64(v*g[j]) - sum - float64(xh[j])*dot))
		}
	}
	return n.dx
}

// sqrt(2/pi), the scale of GELU's tanh approximation.
var geluC = math.Sqrt(2 / math.Pi)

// GELU is the Gaussian error linear unit in its tanh approximation,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
type GELU[T Float] struct {
	x, y, dx []T
	// t is the forward pass's tanh per element: the backward pass needs it
	// again, and the exponential is most of the layer's cost.
	t []T
}

// Forward applies GELU element-wise; x must stay unchanged until Backward.
// tanh(u) = 1 - 2 / (e^{2u} + 1), the exponentials of the whole slice at
// once (expSlice); it saturates cleanly at both ends.
func (g *GELU[T]) Forward(x []T) []T {
	g.x, g.y, g.t = x, grow(g.y, len(x)), grow(g.t, len(x))
	c := T(geluC)
	for i, f := range x {
		g.t[i] = 2 * c * (f + 0.044715*f*f*f)
	}
	expSlice(g.t)
	for i, f := range x {
		t := 1 - 2/(g.t[i]+1)
		g.t[i] = t
		g.y[i] = 0.5 * f * (1 + t)
	}
	return g.y
}

// Backward returns dL/dx for dy.
func (g *GELU[T]) Backward(dy []T) []T {
	g.dx = grow(g.dx, len(g.x))
	c := T(geluC)
	for i, f := range g.x {
		t := g.t[i]
		g.dx[i] = dy[i] * (0.5*(1+t) + 0.5*f*(1-t*t)*c*(1+3*0.044715*f*f))
	}
	return g.dx
}

// Mish is x tanh(softplus(x)) (Misra 2019).
type Mish[T Float] struct {
	x, y, dx []T
	// t and sig are the forward pass's tanh(softplus(x)) and sigmoid(x)
	// per element, kept for the backward pass.
	t, sig []T
}

// Forward applies mish element-wise; x must stay unchanged until Backward.
// With e = e^x (the whole slice at once, expSlice), tanh(log(1+e)) =
// e(e+2) / (e(e+2) + 2) and sigmoid(x) = e / (1+e); above x = 20 both are 1
// to float64 precision, and e(e+2) would overflow.
func (m *Mish[T]) Forward(x []T) []T {
	m.x, m.y = x, grow(m.y, len(x))
	m.t, m.sig = grow(m.t, len(x)), grow(m.sig, len(x))
	copy(m.sig, x)
	expSlice(m.sig)
	for i, v := range x {
		t, sig := T(1), T(1)
		if v <= 20 {
			e := m.sig[i]
			n := e * (e + 2)
			t, sig = n/(n+2), e/(1+e)
		}
		m.t[i], m.sig[i] = t, sig
		m.y[i] = v * t
	}
	return m.y
}

// Backward returns dL/dx for dy: d mish/dx = t + x (1 - t^2) sigmoid(x).
func (m *Mish[T]) Backward(dy []T) []T {
	m.dx = grow(m.dx, len(m.x))
	for i, v := range m.x {
		t := m.t[i]
		m.dx[i] = dy[i] * (t + v*(1-t*t)*m.sig[i])
	}
	return m.dx
}

// Embedding maps integer ids to rows of a learned table (Vocab x Dim).
type Embedding[T Float] struct {
	Vocab, Dim int
	Table      *Param[T]
	ids        []int32
	y          []T
}

// NewEmbedding registers name (Vocab x Dim) on a.
func NewEmbedding[T Float](a *Arena[T], name string, vocab, dim int, init Init) *Embedding[T] {
	return &Embedding[T]{Vocab: vocab, Dim: dim, Table: a.New(name, init, vocab, dim)}
}

// Forward returns the rows of the table for ids, each in [0, Vocab); ids
// must stay unchanged until Backward.
func (e *Embedding[T]) Forward(ids []int32) []T {
	e.ids, e.y = ids, grow(e.y, len(ids)*e.Dim)
	for r, id := range ids {
		copy(e.y[r*e.Dim:(r+1)*e.Dim], e.Table.W[int(id)*e.Dim:(int(id)+1)*e.Dim])
	}
	return e.y
}

// Backward adds dy's rows to the gradients of the rows they came from.
func (e *Embedding[T]) Backward(dy []T) {
	for r, id := range e.ids {
		addTo(e.Table.G[int(id)*e.Dim:(int(id)+1)*e.Dim], dy[r*e.Dim:(r+1)*e.Dim])
	}
}

// MeanPool averages each set of Tokens consecutive rows (Width wide) into
// one row.
type MeanPool[T Float] struct {
	sets, tokens, width int
	y, dx               []T
}

// Forward pools x (sets*tokens x width) to sets x width.
func (p *MeanPool[T]) Forward(x []T, sets, tokens, width int) []T {
	p.sets, p.tokens, p.width = sets, tokens, width
	p.y = grow(p.y, sets*width)
	clear(p.y)
	for s := range sets {
		out := p.y[s*width : (s+1)*width]
		for k := range tokens {
			addTo(out, x[(s*tokens+k)*width:(s*tokens+k+1)*width])
		}
		inv := 1 / T(tokens)
		for j := range out {
			out[j] *= inv
		}
	}
	return p.y
}

// Backward spreads dy (sets x width) evenly over the tokens.
func (p *MeanPool[T]) Backward(dy []T) []T {
	w := p.width
	p.dx = grow(p.dx, p.sets*p.tokens*w)
	inv := 1 / T(p.tokens)
	for s := range p.sets {
		d := dy[s*w : (s+1)*w]
		for k := range p.tokens {
			row := p.dx[(s*p.tokens+k)*w : (s*p.tokens+k+1)*w]
			for j, v := range d {
				row[j] = v * inv
			}
		}
	}
	return p.dx
}
