package disc

import (
	"fmt"
	"math"

	"github.com/dualforce/dualforce/trainer/nn"
)

// penalty computes the WGAN-GP term P = weight/B * sum_b (||grad_x f(x_b)|| - 1)^2
// over a batch and adds dP/dtheta to the network's gradients.
//
// Notation (rows are batch samples, layers 0..L-1 are tanh, layer L is the
// scalar output f = H_{L-1} w + c): H_l is layer l's output, D_l = 1 - H_l^2,
// W_l is n_l x n_{l-1} (n_{-1} is the input width).
//
// Input gradient, row-wise g = grad_x f:
//
//	V_{L-1} = D_{L-1} * w              (w broadcast over rows)
//	U_{l-1} = V_l W_l,  V_{l-1} = D_{l-1} * U_{l-1}   for l = L-1 .. 1
//	G       = V_0 W_0                  (B x n_{-1})
//
// Reverse pass, from Gbar = dP/dG (row b: weight/B * 2(|g_b|-1) g_b/|g_b|):
//
//	dW_0 += V_0^T Gbar,  Vbar_0 = Gbar W_0^T
//	for l = 0 .. L-2:   (V_l = D_l * U_l,  U_l = V_{l+1} W_{l+1})
//	    Ubar_l = D_l * Vbar_l
//	    Hbar_l = -2 H_l * U_l * Vbar_l            (through D_l = 1 - H_l^2)
//	    dW_{l+1} += V_{l+1}^T Ubar_l,  Vbar_{l+1} = Ubar_l W_{l+1}^T
//	at l = L-1:         (V_{L-1} = D_{L-1} * w)
//	    dw += column sums of D_{L-1} * Vbar_{L-1}
//	    Hbar_{L-1} = -2 H_{L-1} * w * Vbar_{L-1}
//
// The Hbar_l are gradients with respect to the hidden outputs H_l, which
// themselves depend on every lower weight and bias through the ordinary
// forward pass; MLP.BackwardWith carries them down. The output bias c gets
// no gradient: f's input gradient does not depend on it.
type penalty[T nn.Float] struct {
	tape       nn.Tape[T]
	v, u       [][]T // V_l (l = 0..L-1) and U_l (l = 0..L-2)
	hbar       [][]T
	g, gbar    []T
	vbar, ubar []T
}

// checkPenaltyNet reports whether net has the shape the penalty derivation
// covers.
func checkPenaltyNet[T nn.Float](net *nn.MLP[T]) error {
	L := len(net.Layers) - 1
	if L < 1 {
		return fmt.Errorf("disc: the discriminator needs a hidden layer")
	}
	for l, d := range net.Layers[:L] {
		if d.Act != nn.Tanh {
			return fmt.Errorf("disc: hidden layer %d is %v, the gradient penalty needs tanh", l, d.Act)
		}
	}
	if out := net.Layers[L]; out.Out != 1 || out.Act != nn.Identity {
		return fmt.Errorf("disc: output layer must be one linear unit, is %d %v", out.Out, out.Act)
	}
	return nil
}

func growTo[T nn.Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// run evaluates the penalty on rows inputs x and adds its gradient to net's.
// It returns the penalty and the mean input-gradient norm. After run, p.g
// holds the input gradients (rows x InDim).
func (p *penalty[T]) run(net *nn.MLP[T], x []T, rows int, weight float64) (value, meanNorm float64) {
	L := len(net.Layers) - 1
	d := net.InDim()
	net.Forward(&p.tape, x, rows)
	if len(p.v) != L {
		p.v, p.u, p.hbar = make([][]T, L), make([][]T, L), make([][]T, L)
	}
	maxW := d
	for l := range L {
		n := net.Layers[l].Out
		maxW = max(maxW, n)
		p.v[l] = growTo(p.v[l], rows*n)
		p.u[l] = growTo(p.u[l], rows*n)
		p.hbar[l] = growTo(p.hbar[l], rows*n)
	}
	p.g, p.gbar = growTo(p.g, rows*d), growTo(p.gbar, rows*d)
	p.vbar, p.ubar = growTo(p.vbar, rows*maxW), growTo(p.ubar, rows*maxW)

	// Forward through the input-gradient chain.
	w := net.Layers[L].W
	h := p.tape.Output(L - 1)
	vTop := p.v[L-1]
	nTop := len(w)
	for i := range vTop {
		hi := h[i]
		vTop[i] = (1 - hi*hi) * w[i%nTop]
	}
	for l := L - 1; l >= 1; l-- {
		below := net.Layers[l-1].Out
		nn.Gemm(false, false, rows, below, net.Layers[l].Out, 1, p.v[l], net.Layers[l].W, 0, p.u[l-1])
		hl := p.tape.Output(l - 1)
		for i, ui := range p.u[l-1] {
			p.v[l-1][i] = (1 - hl[i]*hl[i]) * ui
		}
	}
	nn.Gemm(false, false, rows, d, net.Layers[0].Out, 1, p.v[0], net.Layers[0].W, 0, p.g)

	// Penalty and its gradient with respect to G.
	scale := weight / float64(rows)
	for r := range rows {
		gr := p.g[r*d : (r+1)*d]
		sq := 0.0
		for _, gi := range gr {
			sq += float64(gi) * float64(gi)
		}
		norm := math.Sqrt(sq + 1e-12) // smooth at g = 0, where the norm has no gradient
		value += scale * (norm - 1) * (norm - 1)
		meanNorm += norm / float64(rows)
		k := T(scale * 2 * (norm - 1) / norm)
		for i, gi := range gr {
			p.gbar[r*d+i] = k * gi
		}
	}

	// Reverse pass.
	n0 := net.Layers[0].Out
	nn.Gemm(true, false, n0, d, rows, 1, p.v[0], p.gbar, 1, net.Layers[0].GW)
	vbar := p.vbar[:rows*n0]
	nn.Gemm(false, true, rows, n0, d, 1, p.gbar, net.Layers[0].W, 0, vbar)
	for l := 0; l < L-1; l++ {
		hl, ul := p.tape.Output(l), p.u[l]
		ubar := p.ubar[:len(ul)]
		for i, vb := range vbar {
			ubar[i] = (1 - hl[i]*hl[i]) * vb
			p.hbar[l][i] = -2 * hl[i] * ul[i] * vb
		}
		up := &net.Layers[l+1]
		nn.Gemm(true, false, up.Out, up.In, rows, 1, p.v[l+1], ubar, 1, up.GW)
		vbar = p.vbar[:rows*up.Out]
		nn.Gemm(false, true, rows, up.Out, up.In, 1, ubar, up.W, 0, vbar)
	}
	gw := net.Layers[L].GW
	for i, vb := range vbar {
		hi := h[i]
		gw[i%nTop] += (1 - hi*hi) * vb
		p.hbar[L-1][i] = -2 * hi * w[i%nTop] * vb
	}
	net.BackwardWith(&p.tape, nil, p.hbar, nil)
	return value, meanNorm
}
