package skills

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/viterin/vek/vek32"
)

// FRE (the functional reward encoder, shared/spec/fre.md) turns a reward
// function, seen only through (state, reward) pairs, into a latent z. The
// trainer pre-trains it and hands the frozen encoder over as named float32
// arrays; this file runs it, so the trainer (on D_O) and the robot (on a
// bank's anchor states) encode a reward with one code.
//
// Network (every size read from the arrays' shapes):
//
//	token_k = [ s_k W_s + b_s ; E[bin(r_k)] ]                      width W
//	L pre-LN blocks: x += MHA(LN1(x)); x += W2 GELU(W1 LN2(x) + b1) + b2
//	z = mean_k(LN_final(x_k)) W_mean + b_mean                      latent Z
//
// Conventions (the trainer uses the same): float32, row-major, dense layers
// y = x W + b with W shaped [in, out]; H heads split q, k, v by columns (head
// h uses columns h*W/H .. (h+1)*W/H), scores q k^T / sqrt(W/H), softmax over
// all tokens (no mask, no positions), heads concatenated then W_o; LayerNorm
// with eps 1e-5 and biased variance; GELU in its tanh form
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); rewards normalised as
// clip(r / reward_scale, -1, 1) and binned as
// clip(floor((r/2 + 0.5) * bins), 0, bins-1).

// Names of the encoder's arrays: the naming contract with the trainer.
// Block arrays are FREBlockArray(l, ...) for l = 0 .. L-1.
const (
	FREStateW      = "fre/state_dense/w" // [state dim, state embed]
	FREStateB      = "fre/state_dense/b" // [state embed]
	FRERewardEmbed = "fre/reward_embed"  // [bins, reward embed]
	FREFinalGamma  = "fre/final_ln/gamma"
	FREFinalBeta   = "fre/final_ln/beta"
	FREMeanW       = "fre/mean/w"       // [W, Z]
	FREMeanB       = "fre/mean/b"       // [Z]
	FRERewardScale = "fre/reward_scale" // [1]: r_norm = clip(r / scale, -1, 1)
)

// freBlockArrays are the per-block array suffixes in the order freBlock
// holds them.
var freBlockArrays = [...]string{
	"ln1/gamma", "ln1/beta",
	"attn/wq", "attn/bq", "attn/wk", "attn/bk", "attn/wv", "attn/bv", "attn/wo", "attn/bo",
	"ln2/gamma", "ln2/beta",
	"ffn/w1", "ffn/b1", "ffn/w2", "ffn/b2",
}

// FREBlockArray names array part (e.g. "attn/wq") of transformer block l.
func FREBlockArray(l int, part string) string { return fmt.Sprintf("fre/block%d/%s", l, part) }

// Numeric constants of the encoder (see the conventions above).
const (
	freLayerNormEps = 1e-5
	maxFREBlocks    = 16
	maxFREHeads     = 64
)

// ErrBadFRE wraps every refusal of an FRE encoder: a missing, unknown,
// mis-shaped or non-finite array, or sizes that do not fit together.
var ErrBadFRE = errors.New("skills: bad FRE encoder")

// FRENet is the frozen FRE encoder as the trainer exports it: its arrays
// under the naming contract (FREStateW, ..., FREBlockArray, FRERewardScale)
// and the one size the shapes cannot tell, the number of attention heads.
type FRENet struct {
	Heads  int
	Arrays map[string]Array
}

// FREDims are an encoder's sizes.
type FREDims struct {
	State       int // state width d
	StateEmbed  int // Dense(d -> StateEmbed) part of a token
	Bins        int // reward bins
	RewardEmbed int // embedding part of a token
	Width       int // W = StateEmbed + RewardEmbed
	FFN         int // hidden width of the feed-forward layers
	Blocks      int // L
	Heads       int // H (divides W)
	Latent      int // Z
}

// Dims checks the whole encoder (every array named by the contract and no
// other, shapes that fit together, finite values, a positive reward scale)
// and returns its sizes. Errors wrap ErrBadFRE and name the array.
func (n *FRENet) Dims() (FREDims, error) {
	var d FREDims
	shape := func(name string) ([]int, error) {
		a, ok := n.Arrays[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: array %q is missing", ErrBadFRE, name)
		case len(a.Shape) == 0 || len(a.Data) != numElements(a.Shape):
			return nil, fmt.Errorf("%w: array %q has %d values for shape %v", ErrBadFRE, name, len(a.Data), a.Shape)
		case !allFinite(a.Data):
			return nil, fmt.Errorf("%w: array %q has NaN or Inf", ErrBadFRE, name)
		}
		return a.Shape, nil
	}
	// want checks name against a shape; a zero entry learns that dimension.
	want := func(name string, dims ...*int) error {
		s, err := shape(name)
		if err != nil {
			return err
		}
		if len(s) != len(dims) {
			return fmt.Errorf("%w: array %q has rank %d, want %d", ErrBadFRE, name, len(s), len(dims))
		}
		exp := make([]int, len(dims))
		for i, p := range dims {
			if *p == 0 && s[i] >= 1 && s[i] <= maxLayerWidth {
				*p = s[i]
			}
			exp[i] = *p
		}
		if !slices.Equal(s, exp) {
			return fmt.Errorf("%w: array %q is %v, the rest of the encoder implies %v (every size 1..%d)", ErrBadFRE, name, s, exp, maxLayerWidth)
		}
		return nil
	}
	one := 1
	if err := errors.Join(
		want(FREStateW, &d.State, &d.StateEmbed),
		want(FREStateB, &d.StateEmbed),
		want(FRERewardEmbed, &d.Bins, &d.RewardEmbed),
		want(FRERewardScale, &one),
	); err != nil {
		return FREDims{}, err
	}
	d.Width = d.StateEmbed + d.RewardEmbed
	if d.Bins < 2 {
		return FREDims{}, fmt.Errorf("%w: %d reward bins, want at least 2", ErrBadFRE, d.Bins)
	}
	if s := n.Arrays[FRERewardScale].Data[0]; !(s > 0) {
		return FREDims{}, fmt.Errorf("%w: %s is %v, want > 0", ErrBadFRE, FRERewardScale, s)
	}
	for n.Arrays[FREBlockArray(d.Blocks, freBlockArrays[0])].Data != nil {
		d.Blocks++
		if d.Blocks > maxFREBlocks {
			return FREDims{}, fmt.Errorf("%w: more than %d transformer blocks", ErrBadFRE, maxFREBlocks)
		}
	}
	if d.Blocks == 0 {
		return FREDims{}, fmt.Errorf("%w: array %q is missing (no transformer block)", ErrBadFRE, FREBlockArray(0, freBlockArrays[0]))
	}
	w := &d.Width
	for l := range d.Blocks {
		for i, part := range freBlockArrays {
			dims := []*int{w}
			switch part {
			case "attn/wq", "attn/wk", "attn/wv", "attn/wo":
				dims = []*int{w, w}
			case "ffn/w1":
				dims = []*int{w, &d.FFN}
			case "ffn/b1":
				dims = []*int{&d.FFN}
			case "ffn/w2":
				dims = []*int{&d.FFN, w}
			}
			if err := want(FREBlockArray(l, freBlockArrays[i]), dims...); err != nil {
				return FREDims{}, err
			}
		}
	}
	if err := errors.Join(
		want(FREFinalGamma, w), want(FREFinalBeta, w),
		want(FREMeanW, w, &d.Latent), want(FREMeanB, &d.Latent),
	); err != nil {
		return FREDims{}, err
	}
	known := 8 + d.Blocks*len(freBlockArrays)
	if len(n.Arrays) != known {
		for _, name := range slices.Sorted(maps.Keys(n.Arrays)) {
			if !isFREArray(name, d.Blocks) {
				return FREDims{}, fmt.Errorf("%w: unknown array %q", ErrBadFRE, name)
			}
		}
	}
	d.Heads = n.Heads
	if d.Heads < 1 || d.Heads > maxFREHeads || d.Width%d.Heads != 0 {
		return FREDims{}, fmt.Errorf("%w: %d heads do not split width %d evenly", ErrBadFRE, d.Heads, d.Width)
	}
	return d, nil
}

func isFREArray(name string, blocks int) bool {
	switch name {
	case FREStateW, FREStateB, FRERewardEmbed, FREFinalGamma, FREFinalBeta, FREMeanW, FREMeanB, FRERewardScale:
		return true
	}
	for l := range blocks {
		if part, ok := strings.CutPrefix(name, FREBlockArray(l, "")); ok && slices.Contains(freBlockArrays[:], part) {
			return true
		}
	}
	return false
}

// SubsetPlan picks m subsets of T rows each from a state matrix: subset j is
// rows Rows[j*T : (j+1)*T]. Algorithm 1 of the paper encodes a reward as the
// mean latent over such subsets.
type SubsetPlan struct {
	Rows []int
	T    int
}

// Subsets is m.
func (p SubsetPlan) Subsets() int {
	if p.T <= 0 {
		return 0
	}
	return len(p.Rows) / p.T
}

// BlockPlan splits n rows into m consecutive subsets of n/m rows: the plan
// for a bank's anchor states, which are already a random sample.
func BlockPlan(n, m int) (SubsetPlan, error) {
	if m < 1 || n < m || n%m != 0 {
		return SubsetPlan{}, fmt.Errorf("skills: %d rows do not split into %d equal subsets", n, m)
	}
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return SubsetPlan{Rows: rows, T: n / m}, nil
}

// RandomPlan draws m subsets of t distinct rows out of n, independently,
// with intn (e.g. (*rand.Rand).IntN): the trainer's plan over D_O.
func RandomPlan(intn func(int) int, n, m, t int) (SubsetPlan, error) {
	if m < 1 || t < 1 || t > n {
		return SubsetPlan{}, fmt.Errorf("skills: cannot draw %d subsets of %d distinct rows out of %d", m, t, n)
	}
	p := SubsetPlan{Rows: make([]int, 0, m*t), T: t}
	seen := make(map[int]struct{}, t)
	for range m {
		clear(seen)
		for len(seen) < t {
			r := intn(n)
			if _, dup := seen[r]; !dup {
				seen[r] = struct{}{}
				p.Rows = append(p.Rows, r)
			}
		}
	}
	return p, nil
}

// Encoder errors that callers branch on. Both are wrapped with the offending
// row.
var (
	ErrNonFiniteReward = errors.New("skills: FRE: non-finite reward")
	ErrNonFiniteState  = errors.New("skills: FRE: non-finite state")
)

// Encoder runs a frozen FRE encoder in float32. Everything it needs is
// allocated by NewEncoder; EncodeReward never allocates. It is not safe for
// concurrent use: make one per goroutine.
type Encoder struct {
	dims     FREDims
	maxSet   int
	scale    float32
	stateW   []float32 // [State, StateEmbed]
	stateB   []float32
	embed    []float32 // [Bins, RewardEmbed]
	blocks   []freBlock
	finalG   []float32
	finalB   []float32
	meanW    []float32 // [W, Z]
	meanB    []float32
	mm       matmul
	invSqrtD float32

	// scratch, sized for maxSet tokens
	s      []float32 // gathered states [T, State]
	se     []float32 // state embeddings [T, StateEmbed]
	x      []float32 // residual stream [T, W]
	h      []float32 // layer-normed stream [T, W]
	qkv    []float32 // [T, 3W]
	qh     []float32 // one head's queries [T, dh]
	kt     []float32 // one head's keys, transposed [dh, T]
	vh     []float32 // one head's values [T, dh]
	scores []float32 // [T, T]
	oh     []float32 // one head's output [T, dh]
	att    []float32 // heads concatenated [T, W]
	f      []float32 // feed-forward hidden [T, FFN]
	g      []float32 // GELU scratch [T, FFN]
	pool   []float32 // [W]
	zSet   []float32 // one subset's latent [Z]
}

type freBlock struct {
	ln1g, ln1b []float32
	wqkv, bqkv []float32 // [W, 3W]: wq, wk, wv side by side; [3W]
	wo, bo     []float32
	ln2g, ln2b []float32
	w1, b1     []float32
	w2, b2     []float32
}

// NewEncoder checks net (FRENet.Dims) and prepares an encoder for subsets of
// at most maxSet pairs.
func NewEncoder(net *FRENet, maxSet int) (*Encoder, error) {
	d, err := net.Dims()
	if err != nil {
		return nil, err
	}
	if maxSet < 1 || maxSet > maxFRESet {
		return nil, fmt.Errorf("%w: subsets of %d pairs, want 1..%d", ErrBadFRE, maxSet, maxFRESet)
	}
	arr := func(name string) []float32 { return slices.Clone(net.Arrays[name].Data) }
	e := &Encoder{
		dims: d, maxSet: maxSet, scale: net.Arrays[FRERewardScale].Data[0],
		stateW: arr(FREStateW), stateB: arr(FREStateB), embed: arr(FRERewardEmbed),
		finalG: arr(FREFinalGamma), finalB: arr(FREFinalBeta), meanW: arr(FREMeanW), meanB: arr(FREMeanB),
		mm:       defaultMatmul,
		invSqrtD: float32(1 / math.Sqrt(float64(d.Width/d.Heads))),
	}
	w := d.Width
	for l := range d.Blocks {
		a := func(part string) []float32 { return arr(FREBlockArray(l, part)) }
		b := freBlock{
			ln1g: a("ln1/gamma"), ln1b: a("ln1/beta"),
			wqkv: make([]float32, 0, 3*w*w), bqkv: slices.Concat(a("attn/bq"), a("attn/bk"), a("attn/bv")),
			wo: a("attn/wo"), bo: a("attn/bo"),
			ln2g: a("ln2/gamma"), ln2b: a("ln2/beta"),
			w1: a("ffn/w1"), b1: a("ffn/b1"), w2: a("ffn/w2"), b2: a("ffn/b2"),
		}
		wq, wk, wv := a("attn/wq"), a("attn/wk"), a("attn/wv")
		for r := range w {
			b.wqkv = append(b.wqkv, wq[r*w:(r+1)*w]...)
			b.wqkv = append(b.wqkv, wk[r*w:(r+1)*w]...)
			b.wqkv = append(b.wqkv, wv[r*w:(r+1)*w]...)
		}
		e.blocks = append(e.blocks, b)
	}
	t, dh := maxSet, w/d.Heads
	e.s = make([]float32, t*d.State)
	e.se = make([]float32, t*d.StateEmbed)
	e.x = make([]float32, t*w)
	e.h = make([]float32, t*w)
	e.qkv = make([]float32, t*3*w)
	e.qh = make([]float32, t*dh)
	e.kt = make([]float32, dh*t)
	e.vh = make([]float32, t*dh)
	e.scores = make([]float32, t*t)
	e.oh = make([]float32, t*dh)
	e.att = make([]float32, t*w)
	e.f = make([]float32, t*d.FFN)
	e.g = make([]float32, t*d.FFN)
	e.pool = make([]float32, w)
	e.zSet = make([]float32, d.Latent)
	return e, nil
}

// maxFRESet bounds the subset size an Encoder prepares for (its attention
// scores grow with the square).
const maxFRESet = 4096

// Dims returns the encoder's sizes.
func (e *Encoder) Dims() FREDims { return e.dims }

// MaxSet is the largest subset EncodeReward accepts.
func (e *Encoder) MaxSet() int { return e.maxSet }

// EncodeReward encodes a reward seen on a state matrix: states holds n rows
// of State values (row-major), rewards the reward of each row, unnormalised
// (the encoder applies its reward scale). It writes into z (len Latent) the
// mean over the plan's subsets of the encoder's mean latent (paper
// Algorithm 1). Only the rows the plan names are read, and must be finite; a
// latent that overflows is refused with ErrNonFiniteLatent.
func (e *Encoder) EncodeReward(states, rewards []float32, plan SubsetPlan, z []float32) error {
	d := e.dims
	n := len(rewards)
	m := plan.Subsets()
	switch {
	case len(z) != d.Latent:
		return fmt.Errorf("%w: z has %d values, the encoder's latent %d", ErrDimMismatch, len(z), d.Latent)
	case len(states) != n*d.State:
		return fmt.Errorf("%w: %d state values for %d rewards of %d-wide states", ErrDimMismatch, len(states), n, d.State)
	case m == 0 || len(plan.Rows) != m*plan.T:
		return fmt.Errorf("%w: plan of %d rows in subsets of %d", ErrDimMismatch, len(plan.Rows), plan.T)
	case plan.T > e.maxSet:
		return fmt.Errorf("%w: subsets of %d pairs, encoder prepared for %d", ErrDimMismatch, plan.T, e.maxSet)
	}
	for _, r := range plan.Rows {
		if r < 0 || r >= n {
			return fmt.Errorf("%w: plan names row %d of %d", ErrDimMismatch, r, n)
		}
		if !allFinite(states[r*d.State : (r+1)*d.State]) {
			return fmt.Errorf("%w: row %d", ErrNonFiniteState, r)
		}
		if v := rewards[r]; math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: row %d is %v", ErrNonFiniteReward, r, v)
		}
	}
	clear(z)
	inv := 1 / float32(m)
	for j := range m {
		e.encodeSet(states, rewards, plan.Rows[j*plan.T:(j+1)*plan.T])
		for i, v := range e.zSet {
			z[i] += v * inv
		}
	}
	if !allFinite(z) {
		return fmt.Errorf("%w: the encoder overflowed", ErrNonFiniteLatent)
	}
	return nil
}

// RewardBin is the embedding row of reward r under reward scale scale and
// bins bins: r is normalised to clip(r/scale, -1, 1), then binned.
func RewardBin(r, scale float32, bins int) int {
	rn := min(max(r/scale, -1), 1)
	return min(max(int(math.Floor(float64((rn/2+0.5)*float32(bins)))), 0), bins-1)
}

// encodeSet runs the network on the given rows and leaves the latent in
// e.zSet.
func (e *Encoder) encodeSet(states, rewards []float32, rows []int) {
	d := e.dims
	t, w, dh := len(rows), d.Width, d.Width/d.Heads
	for k, r := range rows {
		copy(e.s[k*d.State:], states[r*d.State:(r+1)*d.State])
	}
	se := e.se[:t*d.StateEmbed]
	e.mm(se, e.s[:t*d.State], e.stateW, d.State, d.StateEmbed)
	x := e.x[:t*w]
	for k, r := range rows {
		tok := x[k*w : (k+1)*w]
		for i, b := range e.stateB {
			tok[i] = se[k*d.StateEmbed+i] + b
		}
		bin := RewardBin(rewards[r], e.scale, d.Bins)
		copy(tok[d.StateEmbed:], e.embed[bin*d.RewardEmbed:(bin+1)*d.RewardEmbed])
	}
	h, qkv, att, f := e.h[:t*w], e.qkv[:t*3*w], e.att[:t*w], e.f[:t*d.FFN]
	qh, kt, vh, sc, oh := e.qh[:t*dh], e.kt[:dh*t], e.vh[:t*dh], e.scores[:t*t], e.oh[:t*dh]
	for bi := range e.blocks {
		b := &e.blocks[bi]
		layerNorm(h, x, b.ln1g, b.ln1b)
		e.mm(qkv, h, b.wqkv, w, 3*w)
		addBias(qkv, b.bqkv)
		for head := range d.Heads {
			c := head * dh
			for k := range t {
				row := qkv[k*3*w:]
				copy(qh[k*dh:(k+1)*dh], row[c:c+dh])
				copy(vh[k*dh:(k+1)*dh], row[2*w+c:2*w+c+dh])
				for i, v := range row[w+c : w+c+dh] {
					kt[i*t+k] = v
				}
			}
			e.mm(sc, qh, kt, dh, t)
			for k := range t {
				softmaxScaled(sc[k*t:(k+1)*t], e.invSqrtD)
			}
			e.mm(oh, sc, vh, t, dh)
			for k := range t {
				copy(att[k*w+c:k*w+c+dh], oh[k*dh:(k+1)*dh])
			}
		}
		e.mm(h, att, b.wo, w, w)
		addBias(h, b.bo)
		addInto(x, h)
		layerNorm(h, x, b.ln2g, b.ln2b)
		e.mm(f, h, b.w1, w, d.FFN)
		addBias(f, b.b1)
		geluTanh(f, e.g[:len(f)])
		e.mm(h, f, b.w2, d.FFN, w)
		addBias(h, b.b2)
		addInto(x, h)
	}
	layerNorm(h, x, e.finalG, e.finalB)
	clear(e.pool)
	for k := range t {
		addInto(e.pool, h[k*w:(k+1)*w])
	}
	inv := 1 / float32(t)
	for i := range e.pool {
		e.pool[i] *= inv
	}
	e.mm(e.zSet, e.pool, e.meanW, w, d.Latent)
	addBias(e.zSet, e.meanB)
}

// layerNorm normalises each row of x (rows of len(gamma)) into dst.
func layerNorm(dst, x, gamma, beta []float32) {
	w := len(gamma)
	for r := 0; r < len(x); r += w {
		row, out := x[r:r+w], dst[r:r+w]
		var mean float32
		for _, v := range row {
			mean += v
		}
		mean /= float32(w)
		var variance float32
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float32(w)
		inv := float32(1 / math.Sqrt(float64(variance)+freLayerNormEps))
		for i, v := range row {
			out[i] = (v-mean)*inv*gamma[i] + beta[i]
		}
	}
}

// expArg bounds arguments of vek32.Exp_Inplace: its AVX2 kernel is exact
// to about 1e-7 inside +-87 and returns garbage below (e.g. a large negative
// number at -100). exp(-80) is 2e-35, zero for every use here.
const expArg = 80

// softmaxScaled replaces row by softmax(scale * row).
func softmaxScaled(row []float32, scale float32) {
	hi := float32(math.Inf(-1))
	for _, v := range row {
		hi = max(hi, v)
	}
	for i, v := range row {
		row[i] = max((v-hi)*scale, -expArg)
	}
	vek32.Exp_Inplace(row)
	inv := 1 / vek32.Sum(row)
	for i := range row {
		row[i] *= inv
	}
}

// geluTanh applies GELU in its tanh form to x in place, through the identity
// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), which has no cancellation and
// lets one vectorised exp do the work (tmp: scratch of len(x)).
func geluTanh(x, tmp []float32) {
	const c = 0.7978845608028654 // sqrt(2/pi)
	for i, v := range x {
		tmp[i] = min(max(-2*c*(v+0.044715*v*v*v), -expArg), expArg)
	}
	vek32.Exp_Inplace(tmp)
	for i, v := range x {
		x[i] = v / (1 + tmp[i])
	}
}

// addBias adds b to every row of x (rows of len(b)).
func addBias(x, b []float32) {
	for r := 0; r < len(x); r += len(b) {
		addInto(x[r:r+len(b)], b)
	}
}

func addInto(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += v
	}
}

// ErrNoFRE reports a bank without an FRE encoder where one is needed.
var ErrNoFRE = errors.New("skills: the bank has no FRE encoder")

// AnchorEncoder encodes a NEW reward on the robot: it evaluates the reward
// on the bank's anchor states and runs the bank's FRE encoder over them
// (FRE.Plan). Everything is allocated by Bank.NewAnchorEncoder; the encode
// methods never allocate. Its cost is one encode per subset. It is not safe
// for concurrent use.
type AnchorEncoder struct {
	enc     *Encoder
	plan    SubsetPlan
	anchors []float32 // standardised, the encoder's input
	raw     []float32 // the same states in observation units
	dim     int
	rewards []float32
}

// NewAnchorEncoder prepares the bank's FRE encoder over its anchors;
// ErrNoFRE when the bank has none.
func (b *Bank) NewAnchorEncoder() (*AnchorEncoder, error) {
	if b.FRE == nil {
		return nil, ErrNoFRE
	}
	if err := b.FRE.validate(b.Contract.Layout, b.LatentDim); err != nil {
		return nil, err
	}
	st := b.Contract.Normaliser
	d := b.Contract.Layout.Dim()
	if err := st.Validate(d); err != nil {
		return nil, fmt.Errorf("skills: normaliser: %w", err)
	}
	enc, plan, err := b.FRE.NewEncoder()
	if err != nil {
		return nil, err
	}
	a := &AnchorEncoder{enc: enc, plan: plan, anchors: b.FRE.Anchors.Data, dim: d,
		raw: make([]float32, len(b.FRE.Anchors.Data)), rewards: make([]float32, b.FRE.Anchors.Shape[0])}
	for i, x := range a.anchors {
		j := i % d
		a.raw[i] = x*max(st.Std[j], st.Epsilon) + st.Mean[j]
	}
	return a, nil
}

// Anchors is the number of anchor states.
func (a *AnchorEncoder) Anchors() int { return len(a.rewards) }

// RawAnchor returns anchor i in observation units (the unnormalised vector
// of the bank's layout), for evaluating a reward on it. Read only.
func (a *AnchorEncoder) RawAnchor(i int) []float32 { return a.raw[i*a.dim : (i+1)*a.dim] }

// EncodeRewards writes into z the latent of the reward whose value on anchor
// i is rewards[i] (len Anchors).
func (a *AnchorEncoder) EncodeRewards(rewards, z []float32) error {
	return a.enc.EncodeReward(a.anchors, rewards, a.plan, z)
}

// EncodeLinearReward writes into z the latent of the reward
// r(s) = sum_j weights[j] * s_j, linear in the raw observation s (weights
// has one entry per observation element).
func (a *AnchorEncoder) EncodeLinearReward(weights, z []float32) error {
	if len(weights) != a.dim {
		return fmt.Errorf("%w: %d reward weights for %d-value observations", ErrDimMismatch, len(weights), a.dim)
	}
	for i := range a.rewards {
		a.rewards[i] = vek32.Dot(a.RawAnchor(i), weights)
	}
	return a.EncodeRewards(a.rewards, z)
}
