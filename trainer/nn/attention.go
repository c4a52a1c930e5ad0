package nn

import (
	"fmt"
	"math"
)

// SetAttention is multi-head self-attention over sets: every token attends
// to every token of its own set, with no mask and no positions, so the
// output is permutation-equivariant and a pooled output permutation-
// invariant. Heads split the width evenly: head h uses columns
// h*W/H..(h+1)*W/H of the query, key and value projections; scores are
// scaled by 1/sqrt(W/H), the heads' outputs are concatenated and projected
// by O.
type SetAttention[T Float] struct {
	Width, Heads int
	Q, K, V, O   *Linear[T]

	sets, tokens int
	q, k, v      []T // views into the projections' outputs
	p            []T // softmax weights, sets x heads x tokens x tokens
	ctx          []T // concatenated head outputs, rows x Width
	dp, dq, dk   []T
	dv, dx       []T
}

// NewSetAttention registers the projections name+"/wq", "/bq", "/wk", "/bk",
// "/wv", "/bv", "/wo", "/bo" (kernels Width x Width, xavier-uniform; biases
// bias) on a.
func NewSetAttention[T Float](a *Arena[T], name string, width, heads int, bias Init) (*SetAttention[T], error) {
	if heads <= 0 || width%heads != 0 {
		return nil, fmt.Errorf("%w: %d heads do not split width %d", ErrShape, heads, width)
	}
	lin := func(n string) *Linear[T] {
		return NewLinear(a, name+"/w"+n, name+"/b"+n, width, width, XavierUniform(width, width), bias)
	}
	return &SetAttention[T]{Width: width, Heads: heads, Q: lin("q"), K: lin("k"), V: lin("v"), O: lin("o")}, nil
}

// Forward attends within each of sets sets of tokens consecutive rows of x
// (sets*tokens x Width); x must stay unchanged until Backward.
func (s *SetAttention[T]) Forward(x []T, sets, tokens int) []T {
	rows, w, n := sets*tokens, s.Width, tokens
	dh := w / s.Heads
	s.sets, s.tokens = sets, tokens
	s.q, s.k, s.v = s.Q.Forward(x, rows), s.K.Forward(x, rows), s.V.Forward(x, rows)
	s.p = grow(s.p, sets*s.Heads*n*n)
	s.ctx = grow(s.ctx, rows*w)
	scale := T(1 / math.Sqrt(float64(dh)))
	for b := range sets {
		for h := range s.Heads {
			off := b*n*w + h*dh
			p := s.p[(b*s.Heads+h)*n*n : (b*s.Heads+h+1)*n*n]
			GemmLD(false, true, n, n, dh, scale, s.q[off:], w, s.k[off:], w, 0, p, n)
			softmaxRows(p, n)
			GemmLD(false, false, n, dh, n, 1, p, n, s.v[off:], w, 0, s.ctx[off:], w)
		}
	}
	return s.O.Forward(s.ctx, rows)
}

// softmaxRows replaces every row (n wide) of p by its softmax.
func softmaxRows[T Float](p []T, n int) {
	for r := 0; r < len(p); r += n {
		row := p[r : r+n]
		m := row[0]
		for _, v := range row[1:] {
			m = max(m, v)
		}
		for j, v := range row {
			row[j] = v - m
		}
		expSlice(row)
		sum := 0.0
		for _, e := range row {
			sum += float64(e)
		}
		inv := T(1 / sum)
		for j := range row {
			row[j] *= inv
		}
	}
}

// Backward adds every projection's gradients for dy (rows x Width) and
// returns dL/dx.
func (s *SetAttention[T]) Backward(dy []T) []T {
	rows, w, n := s.sets*s.tokens, s.Width, s.tokens
	dh := w / s.Heads
	dctx := s.O.Backward(dy, true)
	s.dp = grow(s.dp, n*n)
	s.dq, s.dk, s.dv = grow(s.dq, rows*w), grow(s.dk, rows*w), grow(s.dv, rows*w)
	scale := T(1 / math.Sqrt(float64(dh)))
	for b := range s.sets {
		for h := range s.Heads {
			off := b*n*w + h*dh
			p := s.p[(b*s.Heads+h)*n*n : (b*s.Heads+h+1)*n*n]
			// dP = dctx V^T; dV = P^T dctx
			GemmLD(false, true, n, n, dh, 1, dctx[off:], w, s.v[off:], w, 0, s.dp, n)
			GemmLD(true, false, n, dh, n, 1, p, n, dctx[off:], w, 0, s.dv[off:], w)
			// dS = P * (dP - rowsum(dP * P)), the softmax's Jacobian.
			for r := 0; r < n*n; r += n {
				pr, dr := p[r:r+n], s.dp[r:r+n]
				var dot T
				for j, v := range pr {
					dot += v * dr[j]
				}
				for j, v := range pr {
					dr[j] = v * (dr[j] - dot)
				}
			}
			// S = scale Q K^T: dQ = scale dS K; dK = scale dS^T Q.
			GemmLD(false, false, n, dh, n, scale, s.dp, n, s.k[off:], w, 0, s.dq[off:], w)
			GemmLD(true, false, n, dh, n, scale, s.dp, n, s.q[off:], w, 0, s.dk[off:], w)
		}
	}
	s.dx = grow(s.dx, rows*w)
	copy(s.dx, s.Q.Backward(s.dq, true))
	addTo(s.dx, s.K.Backward(s.dk, true))
	addTo(s.dx, s.V.Backward(s.dv, true))
	return s.dx
}
