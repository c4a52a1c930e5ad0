package skills

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/viterin/vek/vek32"
)

// Policy runs a latent-conditioned policy pi(a | s, z) at deployment.
//
// Network contract (what a bank's slot network must be): an MLP whose input
// is [normalised observation ; z] (obsDim + latentDim values) and whose last
// layer, the head, has no activation. With A = actDim, the head of a single
// Gaussian (components 0 or 1) has 2A outputs: rows [0, A) are the Gaussian
// mean, rows [A, 2A) its log-std. The head of a mixture of K Gaussians
// (components K, 2..MaxComponents) has K*(2A+1) outputs: rows [k*A, (k+1)*A)
// are component k's mean, rows [K*A + k*A, K*A + (k+1)*A) its log-std and row
// 2*K*A + k its mixture logit, for k = 0..K-1 (HeadOutputs counts them).
//
// Deployment uses the tanh-squashed mean, a = tanh(mean); of a mixture, the
// mean of the component with the largest logit, the largest mixture weight
// (ties: the lowest k). The log-std rows are never evaluated; they stay in
// the bank so the trained stochastic policy is stored whole.
//
// Because z is fixed while a skill runs, SetLatent folds W0[:, obs:] z into
// the first layer's bias once; Act then multiplies only the observation
// columns. Act never allocates. A Policy is not safe for concurrent use.
type Policy struct {
	obsDim, latentDim, actDim int
	components                int       // 1: a single Gaussian; 2..MaxComponents: a mixture
	wz                        []float32 // out0 x latentDim: the latent columns of layer 0
	b0                        []float32 // layer 0's own bias
	eval                      *Evaluator
	z                         []float32
	hasLatent                 bool
}

// MaxComponents bounds the components of a mixture policy head.
const MaxComponents = 16

// HeadOutputs is the number of outputs of a policy head for actDim actions
// and the given mixture components: 2*actDim for a single Gaussian
// (components <= 1), components*(2*actDim+1) for a mixture.
func HeadOutputs(actDim, components int) int {
	if components <= 1 {
		return 2 * actDim
	}
	return components * (2*actDim + 1)
}

// HeadComponents is the number of mixture components of a head with outputs
// outputs for actDim actions (HeadOutputs' inverse), or an error when no head
// has that many.
func HeadComponents(outputs, actDim int) (int, error) {
	if actDim > 0 && outputs == 2*actDim {
		return 1, nil
	}
	if k := outputs / (2*actDim + 1); actDim > 0 && k >= 2 && k <= MaxComponents && HeadOutputs(actDim, k) == outputs {
		return k, nil
	}
	return 0, fmt.Errorf("no policy head for %d actions has %d outputs", actDim, outputs)
}

// MostProbable is the component a mixture head deploys: the index of the
// largest of its logits, the lowest among equals, or -1 when a logit is NaN
// (the choice is then undefined). The trainer's nn.SquashedGaussian.Mode
// chooses through it too, so the trainer judges the action the robot runs.
func MostProbable[T ~float32 | ~float64](logits []T) int {
	best := 0
	for c, l := range logits {
		if l != l {
			return -1
		}
		if l > logits[best] {
			best = c
		}
	}
	return best
}

// ErrNonFiniteLatent reports a NaN or Inf in a latent given to SetLatent.
var ErrNonFiniteLatent = errors.New("skills: non-finite latent")

// ErrNoLatent reports Act before SetLatent on a latent-conditioned policy.
var ErrNoLatent = errors.New("skills: policy has no latent set")

// CheckPolicyNet validates net against the policy network contract, with a
// head of the given mixture components (0 or 1: a single Gaussian).
func CheckPolicyNet(net *MLP, obsDim, latentDim, actDim, components int) error {
	if err := net.Validate(); err != nil {
		return err
	}
	if obsDim <= 0 || latentDim < 0 || actDim <= 0 {
		return fmt.Errorf("policy dims obs %d, latent %d, action %d", obsDim, latentDim, actDim)
	}
	if components < 0 || components > MaxComponents {
		return fmt.Errorf("policy head of %d mixture components, want 0..%d", components, MaxComponents)
	}
	if got := net.InDim(); got != obsDim+latentDim {
		return fmt.Errorf("policy input is %d, want obs %d + latent %d", got, obsDim, latentDim)
	}
	head := net.Layers[len(net.Layers)-1]
	if want := HeadOutputs(actDim, components); head.Out != want {
		if components <= 1 {
			return fmt.Errorf("policy head has %d outputs, want mean and log-std of %d actions (%d)", head.Out, actDim, want)
		}
		return fmt.Errorf("policy head has %d outputs, want means, log-stds and logits of a %d-component mixture of %d actions (%d)", head.Out, components, actDim, want)
	}
	if head.Act != ActNone {
		return fmt.Errorf("policy head activation is %v, want none (tanh is applied to the mean)", head.Act)
	}
	return nil
}

// NewPolicy prepares inference for net, whose head has the given mixture
// components (0 or 1: a single Gaussian; see the Policy network contract).
func NewPolicy(net MLP, obsDim, latentDim, actDim, components int) (*Policy, error) {
	if err := CheckPolicyNet(&net, obsDim, latentDim, actDim, components); err != nil {
		return nil, fmt.Errorf("skills: policy: %w", err)
	}
	components = max(components, 1)
	layers := slices.Clone(net.Layers)
	// Trimming the head first also trims layer 0 when it is the head.
	layers[len(layers)-1] = deployedHead(layers[len(layers)-1], actDim, components)
	first := layers[0]
	in := first.In
	obsW := make([]float32, first.Out*obsDim)
	p := &Policy{
		obsDim: obsDim, latentDim: latentDim, actDim: actDim, components: components,
		wz: make([]float32, first.Out*latentDim),
		b0: slices.Clone(first.B),
		z:  make([]float32, latentDim),
	}
	for r := range first.Out {
		copy(obsW[r*obsDim:], first.W[r*in:r*in+obsDim])
		copy(p.wz[r*latentDim:], first.W[r*in+obsDim:(r+1)*in])
	}
	layers[0] = Dense{In: obsDim, Out: first.Out, W: obsW, B: first.B, Act: first.Act}
	eval, err := NewEvaluator(MLP{Layers: layers})
	if err != nil {
		return nil, err
	}
	p.eval = eval
	p.hasLatent = latentDim == 0
	return p, nil
}

// deployedHead keeps the rows of a checked head that Act reads: the mean
// rows of a single Gaussian; the K*actDim mean rows then the K logit rows of
// a mixture of K components.
func deployedHead(head Dense, actDim, components int) Dense {
	means := components * actDim
	d := Dense{In: head.In, Out: means, W: head.W[:means*head.In], B: head.B[:means], Act: ActNone}
	if components > 1 {
		logits := 2 * means
		d.Out += components
		d.W = slices.Concat(d.W, head.W[logits*head.In:(logits+components)*head.In])
		d.B = slices.Concat(d.B, head.B[logits:logits+components])
	}
	return d
}

// ObsDim, LatentDim and ActDim are the policy's sizes.
func (p *Policy) ObsDim() int    { return p.obsDim }
func (p *Policy) LatentDim() int { return p.latentDim }
func (p *Policy) ActDim() int    { return p.actDim }

// Latent returns the latent currently set (read-only).
func (p *Policy) Latent() []float32 { return p.z }

// SetLatent selects the skill latent z (len LatentDim). It does not allocate
// and costs one first-layer-sized matrix-vector product.
func (p *Policy) SetLatent(z []float32) error {
	if len(z) != p.latentDim {
		return ErrDimMismatch
	}
	if !allFinite(z) {
		return ErrNonFiniteLatent
	}
	copy(p.z, z)
	bias := p.eval.layers[0].b
	if p.latentDim == 0 {
		copy(bias, p.b0)
	} else {
		p.eval.mv(bias, p.wz, z)
		vek32.Add_Inplace(bias, p.b0)
	}
	p.hasLatent = true
	return nil
}

// Act writes a = tanh(mean(obs, z)) into dst (len ActDim) for the normalised
// observation obs (len ObsDim): of a mixture, the mean of the component with
// the largest logit. A NaN logit leaves the choice undefined, so the action
// is then NaN, as it is when the network overflows into a mean.
func (p *Policy) Act(obs, dst []float32) error {
	if !p.hasLatent {
		return ErrNoLatent
	}
	if len(dst) != p.actDim {
		return ErrDimMismatch
	}
	out, err := p.eval.Forward(obs)
	if err != nil {
		return err
	}
	mean := out
	if k := p.components; k > 1 {
		best := MostProbable(out[k*p.actDim:])
		if best < 0 {
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			return nil
		}
		mean = out[best*p.actDim : (best+1)*p.actDim]
	}
	for i, m := range mean {
		dst[i] = float32(math.Tanh(float64(m)))
	}
	return nil
}
