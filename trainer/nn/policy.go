package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Bounds of the squashed Gaussian head.
const (
	// ActionClamp bounds |a| before atanh so that dataset actions at +-1 keep
	// a finite log-probability.
	ActionClamp = 1 - 1e-6
	// MeanClip bounds the pre-tanh mean; atanh(ActionClamp) is about 7.25,
	// so no representable action needs a larger one.
	MeanClip  = 7.25
	LogStdMin = -5
	LogStdMax = 2
)

var halfLog2Pi = 0.5 * math.Log(2*math.Pi)

// SquashedGaussian is the policy pi(a|s): u ~ N(mu(s), sigma(s)^2) element-wise,
// a = tanh(u). The network outputs 2*ActDim values per state: the pre-tanh
// means, clipped to +-MeanClip, then the log standard deviations, clamped to
// [LogStdMin, LogStdMax]. The clips pass no gradient, as in torch.clamp.
type SquashedGaussian[T Float] struct {
	Net    *MLP[T]
	ActDim int
	dOut   []T
}

// NewSquashedGaussian builds the head on an MLP obsDim -> hidden... -> 2*actDim
// with the given hidden activation.
func NewSquashedGaussian[T Float](rng *rand.Rand, obsDim int, hidden []int, act Activation, actDim int) (*SquashedGaussian[T], error) {
	if actDim <= 0 {
		return nil, fmt.Errorf("%w: action dimension %d", ErrShape, actDim)
	}
	sizes := append(append([]int{obsDim}, hidden...), 2*actDim)
	net, err := NewMLP[T](rng, sizes, act, Identity)
	if err != nil {
		return nil, err
	}
	return &SquashedGaussian[T]{Net: net, ActDim: actDim}, nil
}

// Unsquash prepares actions (rows x actDim, in [-1,1]) for LogProb: it clamps
// each to +-ActionClamp, writes u = atanh(a) to u and, per row, the tanh
// change-of-variables term sum_j log(1 - a_j^2) to logJac.
func Unsquash[T Float](actions []T, actDim int, u, logJac []T) {
	for r := range len(actions) / actDim {
		s := 0.0
		for j := range actDim {
			i := r*actDim + j
			a := min(max(float64(actions[i]), -ActionClamp), ActionClamp)
			u[i] = T(math.Atanh(a))
			s += math.Log1p(-a * a)
		}
		logJac[r] = T(s)
	}
}

// gaussianTerms returns, from a row o of network output, the clipped mean and
// log-std of action j and whether each clip lets the gradient through.
func (p *SquashedGaussian[T]) gaussianTerms(o []T, j int) (mu, logStd float64, muFree, stdFree bool) {
	mu, logStd = float64(o[j]), float64(o[p.ActDim+j])
	muFree = mu >= -MeanClip && mu <= MeanClip
	stdFree = logStd >= LogStdMin && logStd <= LogStdMax
	return min(max(mu, -MeanClip), MeanClip), min(max(logStd, LogStdMin), LogStdMax), muFree, stdFree
}

// LogProb writes log pi(a_r|s_r) for each of rows states obs and prepared
// actions (u, logJac from Unsquash) to out, using tape tp.
func (p *SquashedGaussian[T]) LogProb(tp *Tape[T], obs, u, logJac []T, rows int, out []T) {
	o := p.Net.Forward(tp, obs, rows)
	w := 2 * p.ActDim
	for r := range rows {
		row, s := o[r*w:(r+1)*w], 0.0
		for j := range p.ActDim {
			mu, logStd, _, _ := p.gaussianTerms(row, j)
			z := (float64(u[r*p.ActDim+j]) - mu) * math.Exp(-logStd)
			s += -0.5*z*z - logStd - halfLog2Pi
		}
		out[r] = T(s - float64(logJac[r]))
	}
}

// WeightedNLL computes the loss -sum_r weights[r] * log pi(a_r|s_r) over
// rows states and prepared actions, ADDS its gradient to the network's
// gradients and returns the loss.
func (p *SquashedGaussian[T]) WeightedNLL(tp *Tape[T], obs, u, logJac, weights []T, rows int) float64 {
	o := p.Net.Forward(tp, obs, rows)
	w := 2 * p.ActDim
	p.dOut = grow(p.dOut, rows*w)
	loss := 0.0
	for r := range rows {
		row, g := o[r*w:(r+1)*w], p.dOut[r*w:(r+1)*w]
		wr, s := float64(weights[r]), 0.0
		for j := range p.ActDim {
			mu, logStd, muFree, stdFree := p.gaussianTerms(row, j)
			invStd := math.Exp(-logStd)
			z := (float64(u[r*p.ActDim+j]) - mu) * invStd
			s += -0.5*z*z - logStd - halfLog2Pi
			g[j], g[p.ActDim+j] = 0, 0
			if muFree {
				g[j] = T(-wr * z * invStd)
			}
			if stdFree {
				g[p.ActDim+j] = T(wr * (1 - z*z))
			}
		}
		loss -= wr * (s - float64(logJac[r]))
	}
	p.Net.Backward(tp, p.dOut, nil)
	return loss
}

// Mode writes the deterministic action tanh(clipped mean) for rows states to
// out (rows x ActDim).
func (p *SquashedGaussian[T]) Mode(tp *Tape[T], obs []T, rows int, out []T) {
	o := p.Net.Forward(tp, obs, rows)
	for r := range rows {
		for j := range p.ActDim {
			mu, _, _, _ := p.gaussianTerms(o[r*2*p.ActDim:], j)
			out[r*p.ActDim+j] = T(math.Tanh(mu))
		}
	}
}
