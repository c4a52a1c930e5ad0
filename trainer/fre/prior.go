package fre

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
)

// Source is what the reward prior is a function of: a pool of D_O states,
// standardised, with their diversity features and imitation reward.
type Source struct {
	// Task is the task the data were collected for; Contract is the data's
	// contract (prep.Data.Contract): its layout names the fields of a state
	// and its normaliser, fitted on D_O, undoes the standardisation for the
	// hand-made rewards, which read physical units.
	Task     string
	Contract skills.Contract
	// States is N x Dim, standardised with the contract's normaliser.
	States []float32
	Dim    int
	// Phi is N x FeatureDim, the standardised diversity features phi(s).
	Phi        []float32
	FeatureDim int
	// RE is the discriminator's imitation reward r_E(s) of every state.
	RE []float32
}

// Len is the number of states.
func (s *Source) Len() int { return len(s.RE) }

// ErrSource reports a source whose arrays do not fit together or hold NaN
// or Inf.
var ErrSource = errors.New("fre: bad reward source")

// Validate checks shapes and values.
func (s *Source) Validate() error {
	n := s.Len()
	if err := s.Contract.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSource, err)
	}
	if err := prep.CheckTask(s.Task, s.Contract); err != nil {
		return fmt.Errorf("%w: %w", ErrSource, err)
	}
	l := s.Contract.Layout
	switch {
	case n < 2:
		return fmt.Errorf("%w: %d states", ErrSource, n)
	case s.Dim != l.Dim():
		return fmt.Errorf("%w: %d-wide states, layout %q is %d wide", ErrSource, s.Dim, l.Name, l.Dim())
	case len(s.States) != n*s.Dim:
		return fmt.Errorf("%w: %d state values for %d states of %d", ErrSource, len(s.States), n, s.Dim)
	case s.FeatureDim <= 0 || len(s.Phi) != n*s.FeatureDim:
		return fmt.Errorf("%w: %d feature values for %d states of %d features", ErrSource, len(s.Phi), n, s.FeatureDim)
	}
	for _, a := range []struct {
		name string
		v    []float32
		w    int
	}{{"states", s.States, s.Dim}, {"features", s.Phi, s.FeatureDim}, {"r_E", s.RE, 1}} {
		for i, v := range a.v {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: %s of state %d: %v", ErrSource, a.name, i/a.w, v)
			}
		}
	}
	return nil
}

// Family is a kind of reward of the prior.
type Family int

// The reward families: the Dual-Force paper's appendix (random linear,
// random two-layer MLPs, hand-made) and ours, rewards of the Dual-Force form
// (1-c) <phi(s), u> + c r_E(s).
const (
	Linear Family = iota
	MLP
	HandMade
	DualForm
	NumFamilies
)

var familyNames = [NumFamilies]string{"linear", "mlp", "hand_made", "dual_force"}

func (f Family) String() string {
	if f >= 0 && f < NumFamilies {
		return familyNames[f]
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// MLPHiddenSizes are the Dual-Force paper's hidden sizes of random reward MLPs.
var MLPHiddenSizes = [][2]int{{128, 64}, {128, 128}, {256, 128}, {256, 256}, {512, 256}, {512, 512}}

// PriorConfig sizes the reward prior.
type PriorConfig struct {
	Linear int `json:"linear"` // random linear functions
	MLP    int `json:"mlp"`    // random two-layer tanh MLPs
	// DualFormMaxNorm bounds |u| of Dual-Force-form rewards: the VdW reward
	// (1 - (l/l0)^3) <phi, psi_i - psi_j> has a direction of norm up to
	// about 0.47 l0 (2.8 at the locomotion l0 of 6).
	DualFormMaxNorm float64 `json:"dual_form_max_norm"`
	// Weights are the probabilities of drawing each family (normalised).
	Weights [NumFamilies]float64 `json:"family_weights"`
	// ScaleQuantile fixes the reward scale: the quantile of |r| over D_O of
	// Dual-Force-form rewards.
	ScaleQuantile float64 `json:"scale_quantile"`
}

// DefaultPriorConfig is the paper's 30 linear and 30 MLP rewards (and its 27
// hand-made ones), Dual-Force-form directions up to norm 3, and the scale at
// the 99th percentile. Dual-Force-form rewards are drawn twice as often as
// each other family: they are the ones Dual-Force encodes, and the hardest
// to reconstruct. Measured on the paper-scale locomotion states with the
// default schedule, against equal weights: held-out R^2 on that family
// 0.836 against 0.817 (seed 1) and 0.825 against 0.799 (seed 2), from one
// subset of 32 states; the other families lose at most 0.016 and stay
// above 0.92.
func DefaultPriorConfig() PriorConfig {
	return PriorConfig{Linear: 30, MLP: 30, DualFormMaxNorm: 3, Weights: [NumFamilies]float64{1, 1, 1, 2}, ScaleQuantile: 0.99}
}

func (c PriorConfig) validate() error {
	sum := 0.0
	for _, w := range c.Weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("%w: family weights %v", ErrConfig, c.Weights)
		}
		sum += w
	}
	switch {
	case c.Linear < 0 || c.MLP < 0 || c.Linear > 1<<16 || c.MLP > 1<<12:
		return fmt.Errorf("%w: %d linear and %d MLP rewards", ErrConfig, c.Linear, c.MLP)
	case !(sum > 0):
		return fmt.Errorf("%w: family weights %v draw nothing", ErrConfig, c.Weights)
	case c.Weights[Linear] > 0 && c.Linear == 0 || c.Weights[MLP] > 0 && c.MLP == 0:
		return fmt.Errorf("%w: a family with weight but no rewards", ErrConfig)
	case !(c.DualFormMaxNorm > 0) || !(c.ScaleQuantile > 0 && c.ScaleQuantile <= 1):
		return fmt.Errorf("%w: Dual-Force-form norm %v, scale quantile %v", ErrConfig, c.DualFormMaxNorm, c.ScaleQuantile)
	}
	return nil
}

// Reward is one reward function of the prior, evaluated on a Source's
// states by index: either a table of precomputed values (linear, MLP,
// hand-made) or a Dual-Force-form reward computed from phi and r_E.
type Reward struct {
	Family Family
	Name   string
	table  []float32
	u      []float32
	c      float32
}

// At is the reward of state i of the source.
func (r *Reward) At(src *Source, i int) float32 {
	if r.table != nil {
		return r.table[i]
	}
	f := src.FeatureDim
	var d float32
	for j, v := range src.Phi[i*f : (i+1)*f] {
		d += v * r.u[j]
	}
	return (1-r.c)*d + r.c*src.RE[i]
}

// Prior is the set of training rewards over a source, and the one reward
// normalisation r_norm = clip(r / Scale, -1, 1) of every reward, in
// training, in Dual-Force and on the robot.
type Prior struct {
	Src    *Source
	Config PriorConfig
	// Scale is the ScaleQuantile of |r| over the source of Dual-Force-form
	// rewards. The table families are drawn at this magnitude: each is
	// multiplied so that its own ScaleQuantile of |r| equals Scale.
	Scale    float32
	Families [NumFamilies][]Reward
	cdf      [NumFamilies]float64
}

// Normalise maps a raw reward into [-1, 1]: clip(r/scale, -1, 1) in float32,
// the rule of the on-robot encoder (skills.RewardBin bins the same value):
// the decoder's targets.
func Normalise(r, scale float32) float32 { return min(max(r/scale, -1), 1) }

// NewPrior builds the prior's functions over src from seed: cfg.Linear
// random linear functions of the standardised state (weights N(0, 1)),
// cfg.MLP random MLPs d -> h1 -> h2 -> 1 (tanh; hidden sizes drawn from
// MLPHiddenSizes), the hand-made rewards of src's layout, and the scale.
// Dual-Force-form rewards are drawn afresh by Draw.
func NewPrior(src *Source, cfg PriorConfig, seed uint64) (*Prior, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	p := &Prior{Src: src, Config: cfg}
	rng := rand.New(rand.NewPCG(seed, 0x9e1_0c0de))
	p.Scale = p.dualFormScale(rng)
	lin, mlp := p.RandomFunctions(rng, cfg.Linear, cfg.MLP)
	p.Families[Linear], p.Families[MLP] = lin, mlp
	hand, err := handMade(src)
	if err != nil {
		return nil, err
	}
	for i := range hand {
		p.rescale(hand[i].table)
	}
	p.Families[HandMade] = hand
	sum := 0.0
	for f, w := range cfg.Weights {
		if len(p.Families[f]) == 0 && Family(f) != DualForm {
			w = 0
		}
		sum += w
		p.cdf[f] = sum
	}
	for f := range p.cdf {
		p.cdf[f] /= sum
	}
	return p, nil
}

// dualFormScale is the quantile of |r| over 256 Dual-Force-form rewards on
// up to 4096 states each.
func (p *Prior) dualFormScale(rng *rand.Rand) float32 {
	n := p.Src.Len()
	per := min(n, 4096)
	abs := make([]float32, 0, 256*per)
	for range 256 {
		r := p.DualFormReward(rng)
		for range per {
			abs = append(abs, float32(math.Abs(float64(r.At(p.Src, rng.IntN(n))))))
		}
	}
	return max(quantile(abs, p.Config.ScaleQuantile), 1e-6)
}

// quantile sorts v and returns its q-quantile (nearest rank).
func quantile(v []float32, q float64) float32 {
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// rescale multiplies a table so that its quantile of |r| is p.Scale (a
// constant zero table stays zero).
func (p *Prior) rescale(t []float32) {
	abs := make([]float32, len(t))
	for i, v := range t {
		abs[i] = float32(math.Abs(float64(v)))
	}
	q := quantile(abs, p.Config.ScaleQuantile)
	if q == 0 {
		return
	}
	k := p.Scale / q
	for i := range t {
		t[i] *= k
	}
}

// DualFormReward draws (1-c) <phi, u> + c r_E with c ~ U(0, 1) and u a
// uniformly random direction of norm U(0, DualFormMaxNorm).
func (p *Prior) DualFormReward(rng *rand.Rand) Reward {
	return p.dualFormInto(rng, make([]float32, p.Src.FeatureDim))
}

// dualFormInto is DualFormReward with u written to the caller's buffer
// (FeatureDim long).
func (p *Prior) dualFormInto(rng *rand.Rand, u []float32) Reward {
	norm := 0.0
	for i := range u {
		v := rng.NormFloat64()
		u[i] = float32(v)
		norm += v * v
	}
	k := rng.Float64() * p.Config.DualFormMaxNorm / max(math.Sqrt(norm), 1e-12)
	for i := range u {
		u[i] *= float32(k)
	}
	return Reward{Family: DualForm, Name: "dual_force", u: u, c: rng.Float32()}
}

// RandomFunctions draws nLinear linear and nMLP MLP rewards, tabulated over
// the source and rescaled to the prior's magnitude. The prior's own come
// from its seed; evaluation draws new ones from another.
func (p *Prior) RandomFunctions(rng *rand.Rand, nLinear, nMLP int) (lin, mlp []Reward) {
	src := p.Src
	n, d := src.Len(), src.Dim
	for k := range nLinear {
		w := make([]float32, d)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		t := make([]float32, n)
		nn.Gemm(false, false, n, 1, d, 1, src.States, w, 0, t)
		p.rescale(t)
		lin = append(lin, Reward{Family: Linear, Name: fmt.Sprintf("linear%d", k), table: t})
	}
	const chunk = 4096
	for k := range nMLP {
		h := MLPHiddenSizes[rng.IntN(len(MLPHiddenSizes))]
		net, err := nn.NewMLP[float32](rng, []int{d, h[0], h[1], 1}, nn.Tanh, nn.Identity)
		if err != nil {
			panic(err) // sizes are positive constants
		}
		// PyTorch's init (U(+-1/sqrt(fan_in))) keeps tanh units almost
		// linear; twice the weights make the functions bend.
		for i := range net.Params() {
			net.Params()[i] *= 2
		}
		t := make([]float32, n)
		var tape nn.Tape[float32]
		for s := 0; s < n; s += chunk {
			rows := min(chunk, n-s)
			copy(t[s:s+rows], net.Forward(&tape, src.States[s*d:(s+rows)*d], rows))
		}
		p.rescale(t)
		mlp = append(mlp, Reward{Family: MLP, Name: fmt.Sprintf("mlp%d_%dx%d", k, h[0], h[1]), table: t})
	}
	return lin, mlp
}

// Draw picks a family by the configured weights and a reward of it (a new
// Dual-Force-form reward, whose direction goes to u, FeatureDim long, or
// one of the tabulated functions).
func (p *Prior) Draw(rng *rand.Rand, u []float32) Reward {
	x := rng.Float64()
	f := Family(0)
	for f < NumFamilies-1 && x >= p.cdf[f] {
		f++
	}
	if f == DualForm {
		return p.dualFormInto(rng, u)
	}
	fam := p.Families[f]
	return fam[rng.IntN(len(fam))]
}
