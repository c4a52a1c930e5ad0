package nn

import (
	"fmt"
	"github.com/dualforce/dualforce/skills"
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

// SquashedGaussian is the policy pi(a|s): a = tanh(u), u drawn from a
// Gaussian, or from a mixture of Components Gaussians, with diagonal
// covariance. The network outputs per state, for A = ActDim and K components,
// the K*A pre-tanh means (component k's at [k*A, (k+1)*A)), clipped to
// +-MeanClip, then the K*A log standard deviations in the same order, clamped
// to [LogStdMin, LogStdMax], then, when K > 1, the K mixture logits
// (skills.Policy's head contract; HeadOutputs values in all). The clips pass
// no gradient, as in torch.clamp.
//
// Why a mixture: a weighted clone of data that go round an obstacle on both
// sides fits one Gaussian between the routes, straight into the obstacle; a
// mixture keeps one component per route, and the deployed action (Mode) is
// the most probable component's mean.
type SquashedGaussian[T Float] struct {
	Net    *MLP[T]
	ActDim int
	// Components is the number of mixture components; 0 and 1 both mean a
	// single Gaussian (no logits).
	Components int

	dOut               []T
	joint, resp, prior []float64 // per component: logit + log N, responsibilities, mixture weights
}

// NewSquashedGaussian builds the head of components components on an MLP
// obsDim -> hidden... -> skills.HeadOutputs(actDim, components) with the given
// hidden activation.
func NewSquashedGaussian[T Float](rng *rand.Rand, obsDim int, hidden []int, act Activation, actDim, components int) (*SquashedGaussian[T], error) {
	if actDim <= 0 {
		return nil, fmt.Errorf("%w: action dimension %d", ErrShape, actDim)
	}
	if components < 0 || components > skills.MaxComponents {
		return nil, fmt.Errorf("%w: %d mixture components, want 0..%d (0 and 1: a single Gaussian)", ErrShape, components, skills.MaxComponents)
	}
	sizes := append(append([]int{obsDim}, hidden...), skills.HeadOutputs(actDim, components))
	net, err := NewMLP[T](rng, sizes, act, Identity)
	if err != nil {
		return nil, err
	}
	return &SquashedGaussian[T]{Net: net, ActDim: actDim, Components: components}, nil
}

// SpreadMeans draws the initial pre-tanh mean biases of a mixture's
// components uniformly from [-1, 1], each component and action its own, so
// that the components start apart; a single Gaussian is left as it is.
// Started at the network's small initial outputs, the components move
// together: in TestMixtureKeepsTwoRoutesApart two of them stayed on the
// plateau of one Gaussian for 2,000 steps before they split.
func (p *SquashedGaussian[T]) SpreadMeans(rng *rand.Rand) {
	if p.components() == 1 {
		return
	}
	head := p.Net.Layers[len(p.Net.Layers)-1]
	for i := range p.components() * p.ActDim {
		head.B[i] = T(2*rng.Float64() - 1)
	}
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

func (p *SquashedGaussian[T]) components() int { return max(1, p.Components) }

// gaussianTerms returns, from a row o of network output, component k's
// clipped mean and log-std of action j and whether each clip lets the
// gradient through.
func (p *SquashedGaussian[T]) gaussianTerms(o []T, k, j int) (mu, logStd float64, muFree, stdFree bool) {
	a := p.ActDim
	mu, logStd = float64(o[k*a+j]), float64(o[(p.components()+k)*a+j])
	muFree = mu >= -MeanClip && mu <= MeanClip
	stdFree = logStd >= LogStdMin && logStd <= LogStdMax
	return min(max(mu, -MeanClip), MeanClip), min(max(logStd, LogStdMin), LogStdMax), muFree, stdFree
}

// componentLogProb returns log N(u; component k of row o), u one prepared action.
func (p *SquashedGaussian[T]) componentLogProb(o, u []T, k int) float64 {
	s := 0.0
	for j := range p.ActDim {
		mu, logStd, _, _ := p.gaussianTerms(o, k, j)
		z := (float64(u[j]) - mu) * math.Exp(-logStd)
		s += -0.5*z*z - logStd - halfLog2Pi
	}
	return s
}

// logits returns row o's mixture logits (none for a single Gaussian).
func (p *SquashedGaussian[T]) logits(o []T) []T {
	k := p.components()
	if k == 1 {
		return nil
	}
	return o[2*k*p.ActDim : 2*k*p.ActDim+k]
}

// rowLogProb returns log p(u | row o) before the tanh correction:
// logsumexp_k(logit_k + log N_k(u)) - logsumexp_k(logit_k), each log-sum-exp
// with its maximum subtracted. It leaves logit_k + log N_k(u) in p.joint.
func (p *SquashedGaussian[T]) rowLogProb(o, u []T) float64 {
	logits := p.logits(o)
	if logits == nil {
		return p.componentLogProb(o, u, 0)
	}
	p.joint = grow(p.joint, len(logits))
	for k, l := range logits {
		p.joint[k] = float64(l) + p.componentLogProb(o, u, k)
	}
	return LogSumExp(p.joint) - LogSumExp(logits)
}

// LogProb writes log pi(a_r|s_r) for each of rows states obs and prepared
// actions (u, logJac from Unsquash) to out, using tape tp.
func (p *SquashedGaussian[T]) LogProb(tp *Tape[T], obs, u, logJac []T, rows int, out []T) {
	o := p.Net.Forward(tp, obs, rows)
	w, a := skills.HeadOutputs(p.ActDim, p.Components), p.ActDim
	for r := range rows {
		out[r] = T(p.rowLogProb(o[r*w:(r+1)*w], u[r*a:(r+1)*a]) - float64(logJac[r]))
	}
}

// WeightedNLL computes the loss -sum_r weights[r] * log pi(a_r|s_r) over
// rows states and prepared actions, ADDS its gradient to the network's
// gradients and returns the loss. For a mixture, with responsibilities
// gamma_k = softmax_k(logit_k + log N_k(u)) and weights pi = softmax(logit),
// d log p / d logit_k = gamma_k - pi_k and each component's Gaussian terms
// take the single Gaussian's gradient scaled by gamma_k.
func (p *SquashedGaussian[T]) WeightedNLL(tp *Tape[T], obs, u, logJac, weights []T, rows int) float64 {
	o := p.Net.Forward(tp, obs, rows)
	w, a, kk := skills.HeadOutputs(p.ActDim, p.Components), p.ActDim, p.components()
	p.dOut = grow(p.dOut, rows*w)
	p.resp, p.prior = grow(p.resp, kk), grow(p.prior, kk)
	loss := 0.0
	for r := range rows {
		row, g, ur := o[r*w:(r+1)*w], p.dOut[r*w:(r+1)*w], u[r*a:(r+1)*a]
		wr := float64(weights[r])
		loss -= wr * (p.rowLogProb(row, ur) - float64(logJac[r]))
		p.resp[0] = 1
		if logits := p.logits(row); logits != nil {
			Softmax(p.joint, p.resp)
			Softmax(logits, p.prior)
			for k := range kk {
				g[2*kk*a+k] = T(-wr * (p.resp[k] - p.prior[k]))
			}
		}
		for k := range kk {
			wk := wr * p.resp[k]
			for j := range a {
				mu, logStd, muFree, stdFree := p.gaussianTerms(row, k, j)
				invStd := math.Exp(-logStd)
				z := (float64(ur[j]) - mu) * invStd
				im, is := k*a+j, (kk+k)*a+j
				g[im], g[is] = 0, 0
				if muFree {
					g[im] = T(-wk * z * invStd)
				}
				if stdFree {
					g[is] = T(wk * (1 - z*z))
				}
			}
		}
	}
	p.Net.Backward(tp, p.dOut, nil)
	return loss
}

// Mode writes the deterministic action for rows states to out (rows x
// ActDim): tanh of the clipped mean of the component skills.MostProbable
// picks, as skills.Policy deploys it (NaN when a logit is NaN).
func (p *SquashedGaussian[T]) Mode(tp *Tape[T], obs []T, rows int, out []T) {
	o := p.Net.Forward(tp, obs, rows)
	w := skills.HeadOutputs(p.ActDim, p.Components)
	for r := range rows {
		row := o[r*w : (r+1)*w]
		best := skills.MostProbable(p.logits(row))
		for j := range p.ActDim {
			if best < 0 {
				out[r*p.ActDim+j] = T(math.NaN())
				continue
			}
			mu, _, _, _ := p.gaussianTerms(row, best, j)
			out[r*p.ActDim+j] = T(math.Tanh(mu))
		}
	}
}
