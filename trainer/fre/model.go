package fre

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/nn"
)

// Arch is the shape of the encoder and decoder. DefaultArch gives the
// reference's sizes.
type Arch struct {
	StateDim int `json:"state_dim"`
	// StateWidth and RewardWidth are the two halves of a token: Dense(s)
	// and Embed(bin(r)); the transformer's width is their sum.
	StateWidth  int `json:"state_width"`
	RewardWidth int `json:"reward_width"`
	Bins        int `json:"bins"`
	Blocks      int `json:"blocks"`
	Heads       int `json:"heads"`
	FFN         int `json:"ffn"`
	Latent      int `json:"latent"`
	// DecoderHidden are the decoder's hidden widths (Dense, mish, LayerNorm each).
	DecoderHidden []int `json:"decoder_hidden"`
}

// ReferenceArch is the reference implementation's model for stateDim-wide
// states: tokens of 64 + 64, 2 pre-LN blocks with 2 heads and a 256-wide
// GELU MLP, latent 128, decoder 512-512-512.
func ReferenceArch(stateDim int) Arch {
	return Arch{
		StateDim: stateDim, StateWidth: 64, RewardWidth: 64, Bins: 32, Blocks: 2, Heads: 2, FFN: 256, Latent: 128,
		DecoderHidden: []int{512, 512, 512},
	}
}

// DefaultArch is the reference's model at half its widths and a quarter of
// its latent: tokens of 32 + 32, a 128-wide MLP, latent 32, decoder
// 256-256-256. On two CPU cores it is what learns more in a given time
// (DefaultConfig says by how much).
func DefaultArch(stateDim int) Arch {
	a := ReferenceArch(stateDim)
	a.StateWidth, a.RewardWidth, a.FFN, a.Latent = 32, 32, 128, 32
	a.DecoderHidden = []int{256, 256, 256}
	return a
}

// Width is the transformer's width.
func (a Arch) Width() int { return a.StateWidth + a.RewardWidth }

// ErrArch reports an impossible model shape.
var ErrArch = errors.New("fre: bad architecture")

// Validate checks that every size is positive and the heads split the width.
func (a Arch) Validate() error {
	for _, v := range []int{a.StateDim, a.StateWidth, a.RewardWidth, a.Bins, a.Blocks, a.Heads, a.FFN, a.Latent} {
		if v <= 0 || v > 1<<16 {
			return fmt.Errorf("%w: %+v", ErrArch, a)
		}
	}
	if a.Width()%a.Heads != 0 {
		return fmt.Errorf("%w: %d heads do not split width %d", ErrArch, a.Heads, a.Width())
	}
	if len(a.DecoderHidden) == 0 {
		return fmt.Errorf("%w: the decoder needs a hidden layer", ErrArch)
	}
	for _, h := range a.DecoderHidden {
		if h <= 0 || h > 1<<16 {
			return fmt.Errorf("%w: decoder width %d", ErrArch, h)
		}
	}
	return nil
}

type block[T nn.Float] struct {
	ln1  *nn.LayerNorm[T]
	attn *nn.SetAttention[T]
	ln2  *nn.LayerNorm[T]
	ffn1 *nn.Linear[T]
	gelu nn.GELU[T]
	ffn2 *nn.Linear[T]
}

type decLayer[T nn.Float] struct {
	lin  *nn.Linear[T]
	mish nn.Mish[T]
	ln   *nn.LayerNorm[T]
}

// Model is the FRE encoder q(z | {(s_k, r_k)}) and decoder p(r | s, z), all
// parameters in one arena. The encoder's parameters carry the names of the
// bank's contract ("fre/..."; see Export); the log-std head and the decoder
// ("train/...") stay in the trainer. A Model runs one batch at a time.
type Model[T nn.Float] struct {
	Arch  Arch
	Arena *nn.Arena[T]

	stateDense   *nn.Linear[T]
	rewardEmbed  *nn.Embedding[T]
	blocks       []block[T]
	finalLN      *nn.LayerNorm[T]
	pool         nn.MeanPool[T]
	mean, logStd *nn.Linear[T]
	dec          []decLayer[T]
	decOut       *nn.Linear[T]

	sets, tokens int
	x, dx        []T // residual stream and its gradient, rows x Width
	split        []T // one half of a token's gradient, made contiguous
	dPool        []T
	decIn        []T
	dMean, dLS   []T
	z            []T
	dPred        []T
}

// NewModel builds a model of shape a with the reference's initialisation
// (xavier-uniform kernels, zero biases, unit-normal embedding rows, LayerNorm
// at identity) drawn from seed.
func NewModel[T nn.Float](a Arch, seed uint64) (*Model[T], error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	ar := &nn.Arena[T]{}
	w := a.Width()
	xav := nn.XavierUniform
	m := &Model[T]{Arch: a, Arena: ar}
	m.stateDense = nn.NewLinear(ar, "fre/state_dense/w", "fre/state_dense/b", a.StateDim, a.StateWidth, xav(a.StateDim, a.StateWidth), nn.Zeros)
	m.rewardEmbed = nn.NewEmbedding(ar, "fre/reward_embed", a.Bins, a.RewardWidth, nn.Normal(1))
	for l := range a.Blocks {
		p := fmt.Sprintf("fre/block%d/", l)
		attn, err := nn.NewSetAttention(ar, p+"attn", w, a.Heads, nn.Zeros)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrArch, err)
		}
		m.blocks = append(m.blocks, block[T]{
			ln1:  nn.NewLayerNorm(ar, p+"ln1", w),
			attn: attn,
			ln2:  nn.NewLayerNorm(ar, p+"ln2", w),
			ffn1: nn.NewLinear(ar, p+"ffn/w1", p+"ffn/b1", w, a.FFN, xav(w, a.FFN), nn.Zeros),
			ffn2: nn.NewLinear(ar, p+"ffn/w2", p+"ffn/b2", a.FFN, w, xav(a.FFN, w), nn.Zeros),
		})
	}
	m.finalLN = nn.NewLayerNorm(ar, "fre/final_ln", w)
	m.mean = nn.NewLinear(ar, "fre/mean/w", "fre/mean/b", w, a.Latent, xav(w, a.Latent), nn.Zeros)
	m.logStd = nn.NewLinear(ar, "train/log_std/w", "train/log_std/b", w, a.Latent, xav(w, a.Latent), nn.Zeros)
	in := a.Latent + a.StateDim
	for i, h := range a.DecoderHidden {
		p := fmt.Sprintf("train/decoder/hidden%d/", i)
		m.dec = append(m.dec, decLayer[T]{
			lin: nn.NewLinear(ar, p+"w", p+"b", in, h, xav(in, h), nn.Zeros),
			ln:  nn.NewLayerNorm(ar, p+"ln", h),
		})
		in = h
	}
	m.decOut = nn.NewLinear(ar, "train/decoder/out/w", "train/decoder/out/b", in, 1, xav(in, 1), nn.Zeros)
	ar.Alloc(rand.New(rand.NewPCG(seed, 0xf4e_e4c0de)))
	return m, nil
}

func grow[T nn.Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Encode runs the encoder on sets sets of tokens (state, bin) pairs: states
// is sets*tokens x StateDim, bins sets*tokens ids from skills.RewardBin. It returns the
// posterior mean and log-std (sets x Latent each), views valid until the
// next call. Inputs must stay unchanged until Backward.
func (m *Model[T]) Encode(states []T, bins []int32, sets, tokens int) (mean, logStd []T) {
	a := m.Arch
	rows, w := sets*tokens, a.Width()
	m.sets, m.tokens = sets, tokens
	sd := m.stateDense.Forward(states, rows)
	re := m.rewardEmbed.Forward(bins[:rows])
	m.x = grow(m.x, rows*w)
	for r := range rows {
		copy(m.x[r*w:r*w+a.StateWidth], sd[r*a.StateWidth:(r+1)*a.StateWidth])
		copy(m.x[r*w+a.StateWidth:(r+1)*w], re[r*a.RewardWidth:(r+1)*a.RewardWidth])
	}
	for l := range m.blocks {
		b := &m.blocks[l]
		h := b.ln1.Forward(m.x, rows)
		addTo(m.x, b.attn.Forward(h, sets, tokens))
		h = b.ln2.Forward(m.x, rows)
		addTo(m.x, b.ffn2.Forward(b.gelu.Forward(b.ffn1.Forward(h, rows)), rows))
	}
	pooled := m.pool.Forward(m.finalLN.Forward(m.x, rows), sets, tokens, w)
	return m.mean.Forward(pooled, sets), m.logStd.Forward(pooled, sets)
}

// encodeBackward adds the encoder's gradients for dMean and dLogStd (sets x
// Latent each).
func (m *Model[T]) encodeBackward(dMean, dLogStd []T) {
	a := m.Arch
	rows, w := m.sets*m.tokens, a.Width()
	m.dPool = grow(m.dPool, m.sets*w)
	copy(m.dPool, m.mean.Backward(dMean, true))
	addTo(m.dPool, m.logStd.Backward(dLogStd, true))
	m.dx = grow(m.dx, rows*w)
	copy(m.dx, m.finalLN.Backward(m.pool.Backward(m.dPool)))
	for l := len(m.blocks) - 1; l >= 0; l-- {
		b := &m.blocks[l]
		addTo(m.dx, b.ln2.Backward(b.ffn1.Backward(b.gelu.Backward(b.ffn2.Backward(m.dx, true)), true)))
		addTo(m.dx, b.ln1.Backward(b.attn.Backward(m.dx)))
	}
	m.split = grow(m.split, rows*max(a.StateWidth, a.RewardWidth))
	sw, rw := a.StateWidth, a.RewardWidth
	for r := range rows {
		copy(m.split[r*sw:(r+1)*sw], m.dx[r*w:r*w+sw])
	}
	m.stateDense.Backward(m.split[:rows*sw], false)
	for r := range rows {
		copy(m.split[r*rw:(r+1)*rw], m.dx[r*w+sw:(r+1)*w])
	}
	m.rewardEmbed.Backward(m.split[:rows*rw])
}

// Decode predicts the normalised reward of decode states for each of sets
// latents: z is sets x Latent, states sets*per x StateDim (per rows for each
// latent). It returns sets*per predictions, a view valid until the next call.
func (m *Model[T]) Decode(z, states []T, sets, per int) []T {
	a := m.Arch
	rows, in := sets*per, a.Latent+a.StateDim
	m.decIn = grow(m.decIn, rows*in)
	for r := range rows {
		row := m.decIn[r*in : (r+1)*in]
		copy(row, z[(r/per)*a.Latent:(r/per+1)*a.Latent])
		copy(row[a.Latent:], states[r*a.StateDim:(r+1)*a.StateDim])
	}
	h := m.decIn
	for i := range m.dec {
		d := &m.dec[i]
		h = d.ln.Forward(d.mish.Forward(d.lin.Forward(h, rows)), rows)
	}
	return m.decOut.Forward(h, rows)
}

// decodeBackward adds the decoder's gradients for dPred and writes dL/dz
// (sets x Latent) to dz.
func (m *Model[T]) decodeBackward(dPred []T, sets, per int, dz []T) {
	a := m.Arch
	in := a.Latent + a.StateDim
	g := m.decOut.Backward(dPred, true)
	for i := len(m.dec) - 1; i >= 0; i-- {
		d := &m.dec[i]
		g = d.lin.Backward(d.mish.Backward(d.ln.Backward(g)), true)
	}
	clear(dz[:sets*a.Latent])
	for r := range sets * per {
		addTo(dz[(r/per)*a.Latent:(r/per+1)*a.Latent], g[r*in:r*in+a.Latent])
	}
}

// Batch is one training batch: Sets rewards, each seen through Tokens
// (state, bin) pairs to encode and Decode (state, normalised reward) pairs
// to reconstruct.
type Batch[T nn.Float] struct {
	Sets, Tokens, Decode int
	EncStates            []T     // Sets*Tokens x StateDim
	EncBins              []int32 // Sets*Tokens
	DecStates            []T     // Sets*Decode x StateDim
	DecRewards           []T     // Sets*Decode, normalised
	// Noise is the reparameterisation's eps ~ N(0, 1), Sets x Latent; nil
	// decodes the posterior mean (evaluation).
	Noise []T
}

// Losses of one batch.
type Losses struct {
	// Recon is the mean squared error of the decoded normalised rewards.
	Recon float64
	// KL is the mean over rewards of KL(q(z) || N(0, I)).
	KL float64
	// Total is Recon + KLWeight * KL, the loss being minimised.
	Total float64
}

// Step runs the model on b, computes the loss MSE + klWeight * KL with the
// log-std convention z = mean + eps * exp(h), KL = 0.5 sum(mean^2 + exp(2h)
// - 2h - 1), and ADDS its gradient to the arena's gradient slab.
func (m *Model[T]) Step(b *Batch[T], klWeight float64) Losses {
	a := m.Arch
	mean, logStd := m.Encode(b.EncStates, b.EncBins, b.Sets, b.Tokens)
	n := b.Sets * a.Latent
	m.z = grow(m.z, n)
	var kl float64
	for i := range n {
		mu, h := float64(mean[i]), float64(logStd[i])
		e2h := math.Exp(2 * h)
		kl += 0.5 * (mu*mu + e2h - 2*h - 1)
		m.z[i] = mean[i]
		if b.Noise != nil {
			m.z[i] += b.Noise[i] * T(math.Exp(h))
		}
	}
	kl /= float64(b.Sets)
	pred := m.Decode(m.z, b.DecStates, b.Sets, b.Decode)
	rows := b.Sets * b.Decode
	m.dPred = grow(m.dPred, rows)
	var sse float64
	for i, p := range pred {
		d := float64(p - b.DecRewards[i])
		sse += d * d
		m.dPred[i] = T(2 * d / float64(rows))
	}
	m.dMean, m.dLS = grow(m.dMean, n), grow(m.dLS, n)
	m.decodeBackward(m.dPred, b.Sets, b.Decode, m.dMean)
	klScale := klWeight / float64(b.Sets)
	for i := range n {
		dz := float64(m.dMean[i])
		mu, h := float64(mean[i]), float64(logStd[i])
		dh := klScale * (math.Exp(2*h) - 1)
		if b.Noise != nil {
			dh += dz * float64(b.Noise[i]) * math.Exp(h)
		}
		m.dMean[i] = T(dz + klScale*mu)
		m.dLS[i] = T(dh)
	}
	m.encodeBackward(m.dMean, m.dLS)
	recon := sse / float64(rows)
	return Losses{Recon: recon, KL: kl, Total: recon + klWeight*kl}
}

func addTo[T nn.Float](dst, src []T) {
	for i := range dst {
		dst[i] += src[i]
	}
}
