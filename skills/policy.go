package skills

import (
	"errors"
	"fmt"
	"math"

	"github.com/viterin/vek/vek32"
)

// Policy runs a latent-conditioned policy pi(a | s, z) at deployment.
//
// Network contract (what a bank's slot network must be): an MLP whose input
// is [normalised observation ; z] (obsDim + latentDim values) and whose last
// layer has no activation and 2*actDim outputs: rows [0, actDim) are the
// Gaussian mean, rows [actDim, 2*actDim) its log-std. Deployment uses the
// tanh-squashed mean, a = tanh(mean), so the log-std rows are never
// evaluated; they stay in the bank so the trained stochastic policy is
// stored whole.
//
// Because z is fixed while a skill runs, SetLatent folds W0[:, obs:] z into
// the first layer's bias once; Act then multiplies only the observation
// columns. Act never allocates. A Policy is not safe for concurrent use.
type Policy struct {
	obsDim, latentDim, actDim int
	wz                        []float32 // out0 x latentDim: the latent columns of layer 0
	b0                        []float32 // layer 0's own bias
	eval                      *Evaluator
	z                         []float32
	hasLatent                 bool
}

// ErrNonFiniteLatent reports a NaN or Inf in a latent given to SetLatent.
var ErrNonFiniteLatent = errors.New("skills: non-finite latent")

// ErrNoLatent reports Act before SetLatent on a latent-conditioned policy.
var ErrNoLatent = errors.New("skills: policy has no latent set")

// CheckPolicyNet validates net against the policy network contract.
func CheckPolicyNet(net *MLP, obsDim, latentDim, actDim int) error {
	if err := net.Validate(); err != nil {
		return err
	}
	if obsDim <= 0 || latentDim < 0 || actDim <= 0 {
		return fmt.Errorf("policy dims obs %d, latent %d, action %d", obsDim, latentDim, actDim)
	}
	if got := net.InDim(); got != obsDim+latentDim {
		return fmt.Errorf("policy input is %d, want obs %d + latent %d", got, obsDim, latentDim)
	}
	head := net.Layers[len(net.Layers)-1]
	if head.Out != 2*actDim {
		return fmt.Errorf("policy head has %d outputs, want mean and log-std of %d actions (%d)", head.Out, actDim, 2*actDim)
	}
	if head.Act != ActNone {
		return fmt.Errorf("policy head activation is %v, want none (tanh is applied to the mean)", head.Act)
	}
	return nil
}

// NewPolicy prepares inference for net (see the Policy network contract).
func NewPolicy(net MLP, obsDim, latentDim, actDim int) (*Policy, error) {
	if err := CheckPolicyNet(&net, obsDim, latentDim, actDim); err != nil {
		return nil, fmt.Errorf("skills: policy: %w", err)
	}
	first := net.Layers[0]
	in := first.In
	obsW := make([]float32, first.Out*obsDim)
	p := &Policy{
		obsDim: obsDim, latentDim: latentDim, actDim: actDim,
		wz: make([]float32, first.Out*latentDim),
		b0: append([]float32(nil), first.B...),
		z:  make([]float32, latentDim),
	}
	for r := range first.Out {
		copy(obsW[r*obsDim:], first.W[r*in:r*in+obsDim])
		copy(p.wz[r*latentDim:], first.W[r*in+obsDim:(r+1)*in])
	}
	layers := append([]Dense(nil), net.Layers...)
	layers[0] = Dense{In: obsDim, Out: first.Out, W: obsW, B: first.B, Act: first.Act}
	head := layers[len(layers)-1]
	layers[len(layers)-1] = Dense{In: head.In, Out: actDim, W: head.W[:actDim*head.In], B: head.B[:actDim], Act: ActNone}
	eval, err := NewEvaluator(MLP{Layers: layers})
	if err != nil {
		return nil, err
	}
	p.eval = eval
	// A single-layer network is its own head: keep only the mean rows.
	rows := eval.layers[0].out
	p.wz, p.b0 = p.wz[:rows*latentDim], p.b0[:rows]
	p.hasLatent = latentDim == 0
	return p, nil
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
// observation obs (len ObsDim).
func (p *Policy) Act(obs, dst []float32) error {
	if !p.hasLatent {
		return ErrNoLatent
	}
	if len(dst) != p.actDim {
		return ErrDimMismatch
	}
	mean, err := p.eval.Forward(obs)
	if err != nil {
		return err
	}
	for i, m := range mean {
		dst[i] = float32(math.Tanh(float64(m)))
	}
	return nil
}
