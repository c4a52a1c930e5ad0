package disc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/nn"
)

// Config sets up a Discriminator. DefaultConfig gives the values of the
// spec (shared/spec/dualforce.md).
type Config struct {
	Hidden        []int   // tanh hidden widths
	LR            float64 // Adam learning rate
	Batch         int     // states of EACH set per step
	PenaltyWeight float64 // lambda of the WGAN-GP term
	RewardClip    float64 // |r_E| bound
	Seed          uint64
}

// DefaultConfig is d -> 256 tanh -> 256 tanh -> 1, Adam 3e-4, batch 256 of
// each set, penalty 10, reward clip 6.9 (c within 1e-3 of 0 or 1).
func DefaultConfig() Config {
	return Config{Hidden: []int{256, 256}, LR: 3e-4, Batch: 256, PenaltyWeight: 10, RewardClip: 6.9, Seed: 1}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("disc: bad configuration")

// Discriminator is f with its optimiser and scratch space. It is not safe
// for concurrent use.
type Discriminator struct {
	cfg    Config
	obsDim int
	net    *nn.MLP[float32]
	opt    *nn.Adam[float32]
	rng    *rand.Rand

	expertTape, offlineTape nn.Tape[float32]
	pen                     penalty[float32]
	expert, offline, mix    []float32
	dLogit                  []float32
}

// StepStats describes one training step on its batch.
type StepStats struct {
	BCE, Penalty float64
	// GradNorm is the mean ||grad_x f|| on the interpolates (the penalty
	// pulls it to 1).
	GradNorm float64
	// ExpertAcc and OfflineAcc are the fractions of the batch classified
	// right (f > 0 for expert states, f < 0 for offline ones).
	ExpertAcc, OfflineAcc float64
}

// New builds a discriminator for obsDim-wide states.
func New(obsDim int, cfg Config) (*Discriminator, error) {
	if cfg.Batch <= 0 || cfg.LR <= 0 || cfg.PenaltyWeight < 0 || cfg.RewardClip <= 0 || len(cfg.Hidden) == 0 {
		return nil, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_d15c))
	net, err := nn.NewMLP[float32](rng, append(append([]int{obsDim}, cfg.Hidden...), 1), nn.Tanh, nn.Identity)
	if err != nil {
		return nil, fmt.Errorf("disc: %w", err)
	}
	if err := checkPenaltyNet(net); err != nil {
		return nil, err
	}
	b := cfg.Batch
	return &Discriminator{
		cfg: cfg, obsDim: obsDim, net: net, rng: rng,
		opt:    nn.NewAdam[float32](len(net.Params()), cfg.LR),
		expert: make([]float32, b*obsDim), offline: make([]float32, b*obsDim), mix: make([]float32, b*obsDim),
		dLogit: make([]float32, b),
	}, nil
}

// Net is the trained f, for export into a bank.
func (d *Discriminator) Net() *nn.MLP[float32] { return d.net }

// softplus is log(1 + e^x) without overflow.
func softplus(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// bce returns scale * sum_r BCE(sigmoid(logits[r]), label) for a label of 0
// or 1, writes its gradient with respect to each logit to grad, and returns
// the fraction of logits on the label's side of 0.
func bce[T nn.Float](logits []T, label, scale float64, grad []T) (loss, accuracy float64) {
	sign := 2*label - 1 // -log sigmoid(x) = softplus(-x); -log(1-sigmoid(x)) = softplus(x)
	for r, v := range logits {
		x := float64(v)
		loss += scale * softplus(-sign*x)
		grad[r] = T(scale * (sigmoid(x) - label))
		if sign*x > 0 {
			accuracy++
		}
	}
	return loss, accuracy / float64(len(logits))
}

func (d *Discriminator) sample(dst, states []float32) {
	n := len(states) / d.obsDim
	for r := range d.cfg.Batch {
		i := d.rng.IntN(n)
		copy(dst[r*d.obsDim:(r+1)*d.obsDim], states[i*d.obsDim:(i+1)*d.obsDim])
	}
}

// Step takes one Adam step on a batch drawn uniformly (with replacement)
// from each set: expert states are labelled 1, offline states 0. Both are
// row-major with the discriminator's width and must be non-empty
// (dataset.CheckPair guarantees it).
func (d *Discriminator) Step(expert, offline []float32) StepStats {
	b := d.cfg.Batch
	d.sample(d.expert, expert)
	d.sample(d.offline, offline)
	var st StepStats
	d.net.ZeroGrad()
	st.BCE, st.ExpertAcc = d.classify(&d.expertTape, d.expert, 1)
	bceO, accO := d.classify(&d.offlineTape, d.offline, 0)
	st.BCE += bceO
	st.OfflineAcc = accO
	for r := range b {
		a := d.rng.Float32()
		row := r * d.obsDim
		for j := range d.obsDim {
			d.mix[row+j] = a*d.expert[row+j] + (1-a)*d.offline[row+j]
		}
	}
	st.Penalty, st.GradNorm = d.pen.run(d.net, d.mix, b, d.cfg.PenaltyWeight)
	d.opt.Step(d.net.Params(), d.net.Grads())
	return st
}

// classify adds the BCE gradient of one labelled batch to the network's.
func (d *Discriminator) classify(tape *nn.Tape[float32], x []float32, label float64) (loss, accuracy float64) {
	f := d.net.Forward(tape, x, d.cfg.Batch)
	loss, accuracy = bce(f, label, 1/float64(d.cfg.Batch), d.dLogit)
	d.net.Backward(tape, d.dLogit, nil)
	return loss, accuracy
}

// chunkRows bounds the batch of the whole-set passes.
const chunkRows = 4096

// Logits writes f(s) for every row of states to out.
func (d *Discriminator) Logits(states, out []float32) {
	var tape nn.Tape[float32]
	n := len(states) / d.obsDim
	for start := 0; start < n; start += chunkRows {
		rows := min(chunkRows, n-start)
		f := d.net.Forward(&tape, states[start*d.obsDim:(start+rows)*d.obsDim], rows)
		copy(out[start:start+rows], f)
	}
}

// Reward writes the imitation reward r_E(s) = f(s), clipped to
// +-RewardClip, for every row of states to out.
func (d *Discriminator) Reward(states, out []float32) {
	d.Logits(states, out)
	c := float32(d.cfg.RewardClip)
	for i, v := range out[:len(states)/d.obsDim] {
		out[i] = min(max(v, -c), c)
	}
}
