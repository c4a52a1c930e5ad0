package fre

import (
	"math"
	"math/rand/v2"
)

// EvalConfig sizes an evaluation. Every state it encodes or decodes is a
// held-out state, never seen in training.
type EvalConfig struct {
	// Decode is the number of held-out states each reward is reconstructed on.
	Decode int `json:"decode"`
	// DualForm is the number of fresh Dual-Force-form rewards scored.
	DualForm int `json:"dual_form"`
	// NewLinear and NewMLP are the numbers of random functions, drawn from
	// another seed than the prior's, scored as unseen rewards.
	NewLinear int `json:"new_linear"`
	NewMLP    int `json:"new_mlp"`
	// Identify is the number of unseen rewards (new linear, new MLP and
	// Dual-Force-form, in the proportions 1:1:2) of the identification test.
	Identify int `json:"identify"`
	// Stability is the number of Dual-Force-form rewards whose codes are
	// compared with the codes of a slightly changed and of another skill's
	// reward (Report.Stability).
	Stability int    `json:"stability"`
	Seed      uint64 `json:"seed"`
}

// DefaultEvalConfig scores every function of the prior, 200 Dual-Force-form
// rewards and 20 new linear and MLP functions on 64 held-out states each,
// and identifies 200 unseen rewards.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Decode: 64, DualForm: 200, NewLinear: 20, NewMLP: 20, Identify: 200, Stability: 100, Seed: 7}
}

// Score is the reconstruction of a set of rewards: the mean squared error
// of the decoded normalised rewards and R^2 = 1 - SSE/SST with SST about the
// mean of all their targets.
type Score struct {
	Family string `json:"family"`
	// Subsets is m: each reward is decoded from the mean of the encoder's
	// mean latent over m disjoint subsets of Tokens held-out states.
	Subsets int `json:"subsets"`
	// States is the number of states behind each code, m Tokens.
	States  int     `json:"states"`
	Rewards int     `json:"rewards"`
	MSE     float64 `json:"mse"`
	R2      float64 `json:"r2"`
}

// Report is an evaluation of the encoder and decoder on held-out states.
type Report struct {
	// Seen scores the prior's own functions (linear, MLP, hand-made) and
	// fresh Dual-Force-form rewards, Unseen random functions the encoder
	// was never trained on. Both hold every family twice, as identification
	// is measured: from codes of one subset of Tokens states, then from
	// codes as Dual-Force and the robot encode.
	Seen   []Score `json:"seen"`
	Unseen []Score `json:"unseen"`
	// Identification is measured twice: codes of one subset of Tokens
	// states (the test), and codes as Dual-Force and the robot
	// encode, the mean over Anchors/Tokens subsets.
	Identification []Identification `json:"identification"`
	// Stability is measured on codes as Dual-Force and the robot encode
	// (nil when there are too few held-out states for it).
	Stability *Stability `json:"stability,omitempty"`
}

// StabilityStep is the change of c, the weight of r_E in a Dual-Force-form
// reward, that Stability calls small: about one multiplier step of
// Dual-Force's defaults (mu moves by at most MuLR 0.1 times sigmoid'(mu)
// <= 0.25 times |eps - phi|, so sigmoid(mu) by at most about 0.025 for
// |eps - phi| <= 4).
const StabilityStep = 0.02

// Stability is fre.md's "stability for Dual-Force": how far the code of a
// Dual-Force-form reward (1-c) <phi, u> + c r_E moves when the reward
// changes a little (c by StabilityStep, as one multiplier step changes a
// skill's reward) and when it becomes another skill's (another direction u,
// the same c), each against the code of the same reward on other states
// (the encoder's own noise). Distances are Euclidean, means over Rewards.
type Stability struct {
	Rewards int `json:"rewards"`
	// States is the number of held-out states behind each code (Subsets
	// subsets of Tokens); the changed rewards are encoded on the same states
	// as the reward they are compared with.
	States  int `json:"states"`
	Subsets int `json:"subsets"`
	// OtherStates is the distance between the codes of one reward on two
	// disjoint sets of states.
	OtherStates float64 `json:"other_states"`
	// SmallChange is the distance to the code of the reward with c moved by
	// StabilityStep (down where c + StabilityStep would pass 1).
	SmallChange float64 `json:"small_change"`
	// OtherSkill is the distance to the code of a reward with another u
	// (direction and norm drawn afresh, as the prior draws them) and the
	// same c.
	OtherSkill float64 `json:"other_skill"`
}

// Identification is the fraction of unseen rewards whose code from held-out
// states has, among the codes of all of them from other (disjoint) held-out
// states, the code of the same reward as nearest neighbour (Euclidean).
type Identification struct {
	// Subsets is m: each code is the mean of the encoder's mean latent over
	// m disjoint subsets of Tokens states.
	Subsets int `json:"subsets"`
	// States is the number of states behind each code, m Tokens.
	States   int     `json:"states"`
	Rewards  int     `json:"rewards"`
	Fraction float64 `json:"fraction"`
	// ByFamily splits Fraction by the rewards' family; the nearest
	// neighbour is still searched among all rewards.
	ByFamily []Identified `json:"by_family"`
}

// Identified is the identification of the rewards of one family.
type Identified struct {
	Family   string  `json:"family"`
	Rewards  int     `json:"rewards"`
	Fraction float64 `json:"fraction"`
}

// evalChunk bounds the rewards encoded at once.
const evalChunk = 256

// Evaluate measures reconstruction and identification on held-out states.
// It draws from its own generator (cfg.Seed), so it does not disturb
// training.
func (t *Trainer) Evaluate(cfg EvalConfig) Report {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xe7a1))
	var rep Report
	// Every reward needs distinct held-out states: Tokens to encode and the
	// rest to decode.
	cfg.Decode = min(cfg.Decode, len(t.held)-t.cfg.Tokens)
	// Every family is scored twice: from one subset of Tokens states, and
	// from codes of m subsets as Dual-Force and the robot encode, the latter
	// on states of a generator of its own, so that the one-subset scores do
	// not depend on whether or how the second measurement is made.
	m := t.cfg.Anchors / t.cfg.Tokens
	mDecode := min(cfg.Decode, len(t.held)-m*t.cfg.Tokens)
	mRNG := rand.New(rand.NewPCG(cfg.Seed, 0xe7a2))
	var seenM, unseenM []Score
	scoreBoth := func(one, many *[]Score, name string, rewards []Reward) {
		*one = append(*one, t.score(name, rewards, 1, cfg.Decode, rng))
		if m > 1 && mDecode > 0 {
			*many = append(*many, t.score(name, rewards, m, mDecode, mRNG))
		}
	}
	for _, f := range []Family{Linear, MLP, HandMade} {
		if fam := t.prior.Families[f]; len(fam) > 0 {
			scoreBoth(&rep.Seen, &seenM, f.String(), fam)
		}
	}
	var df []Reward
	for range cfg.DualForm {
		df = append(df, t.prior.DualFormReward(rng))
	}
	if len(df) > 0 {
		scoreBoth(&rep.Seen, &seenM, DualForm.String(), df)
	}
	nLin, nMLP := max(cfg.NewLinear, cfg.Identify/4), max(cfg.NewMLP, cfg.Identify/4)
	lin, mlp := t.prior.RandomFunctions(rng, nLin, nMLP)
	if cfg.NewLinear > 0 {
		scoreBoth(&rep.Unseen, &unseenM, Linear.String(), lin[:cfg.NewLinear])
	}
	if cfg.NewMLP > 0 {
		scoreBoth(&rep.Unseen, &unseenM, MLP.String(), mlp[:cfg.NewMLP])
	}
	rep.Seen, rep.Unseen = append(rep.Seen, seenM...), append(rep.Unseen, unseenM...)
	if cfg.Identify > 0 {
		ids := append(append([]Reward(nil), lin[:cfg.Identify/4]...), mlp[:cfg.Identify/4]...)
		for len(ids) < cfg.Identify {
			ids = append(ids, t.prior.DualFormReward(rng))
		}
		ms := []int{1}
		if m > 1 {
			ms = append(ms, m)
		}
		for _, subsets := range ms {
			// Every reward needs 2m subsets of distinct held-out states.
			if 2*subsets*t.cfg.Tokens <= len(t.held) {
				rep.Identification = append(rep.Identification, t.identify(ids, subsets, rng))
			}
		}
	}
	if cfg.Stability > 0 && m*t.cfg.Tokens <= len(t.held) {
		rep.Stability = t.stability(cfg.Stability, m, rng, StabilityStep)
	}
	return rep
}

// stability measures Report.Stability on n fresh Dual-Force-form rewards,
// their codes the mean over m subsets of held-out states, for a change of c
// by step.
func (t *Trainer) stability(n, m int, rng *rand.Rand, step float32) *Stability {
	base, small, other := make([]Reward, n), make([]Reward, n), make([]Reward, n)
	for i := range base {
		base[i] = t.prior.DualFormReward(rng)
		small[i] = base[i]
		if small[i].c += step; small[i].c > 1 {
			small[i].c = base[i].c - step
		}
		other[i] = t.prior.DualFormReward(rng)
		other[i].c = base[i].c
	}
	// Codes drawn with the same seed are of the same states: the states a
	// reward is encoded on depend on the generator only.
	onStates, elsewhere := rng.Uint64(), rng.Uint64()
	z := t.cfg.Arch.Latent
	codes := func(rewards []Reward, seed uint64) []float64 {
		states := rand.New(rand.NewPCG(seed, 0x57ab))
		var out []float64
		chunkLen := max(1, evalChunk/m)
		for start := 0; start < len(rewards); start += chunkLen {
			chunk := rewards[start:min(start+chunkLen, len(rewards))]
			out = append(out, t.meanCodes(t.evalBatch(chunk, m*t.cfg.Tokens, 0, states), len(chunk), m)...)
		}
		return out
	}
	mean := func(a, b []float64) float64 {
		sum := 0.0
		for i := range n {
			sum += math.Sqrt(sqDist(a[i*z:(i+1)*z], b[i*z:(i+1)*z]))
		}
		return sum / float64(n)
	}
	a := codes(base, onStates)
	return &Stability{Rewards: n, States: m * t.cfg.Tokens, Subsets: m,
		OtherStates: mean(a, codes(base, elsewhere)), SmallChange: mean(a, codes(small, onStates)), OtherSkill: mean(a, codes(other, onStates))}
}

// evalBatch fills a batch for rewards on held-out states: tokens encode
// and decode decode states per reward, all distinct.
func (t *Trainer) evalBatch(rewards []Reward, tokens, decode int, rng *rand.Rand) *Batch[float32] {
	d, n := t.prior.Src.Dim, len(rewards)
	b := &Batch[float32]{
		Sets: n, Tokens: tokens, Decode: decode,
		EncStates: make([]float32, n*tokens*d), EncBins: make([]int32, n*tokens),
		DecStates: make([]float32, n*decode*d), DecRewards: make([]float32, n*decode),
	}
	for s := range rewards {
		t.fill(b, s, &rewards[s], t.held, rng)
	}
	return b
}

// score reconstructs every reward on decode held-out states from its code
// over m subsets of Tokens other held-out states.
func (t *Trainer) score(name string, rewards []Reward, m, decode int, rng *rand.Rand) Score {
	z := t.cfg.Arch.Latent
	var pred, target []float64
	chunkLen := max(1, evalChunk/m)
	code := make([]float32, 0, min(len(rewards), chunkLen)*z)
	for start := 0; start < len(rewards); start += chunkLen {
		chunk := rewards[start:min(start+chunkLen, len(rewards))]
		b := t.evalBatch(chunk, m*t.cfg.Tokens, decode, rng)
		code = code[:0]
		for _, v := range t.meanCodes(b, len(chunk), m) {
			code = append(code, float32(v))
		}
		for i, p := range t.model.Decode(code, b.DecStates, b.Sets, b.Decode) {
			pred, target = append(pred, float64(p)), append(target, float64(b.DecRewards[i]))
		}
	}
	mu := 0.0
	for _, y := range target {
		mu += y
	}
	mu /= float64(len(target))
	var sse, sst float64
	for i, y := range target {
		sse += (pred[i] - y) * (pred[i] - y)
		sst += (y - mu) * (y - mu)
	}
	return Score{Family: name, Subsets: m, States: m * t.cfg.Tokens, Rewards: len(rewards), MSE: sse / float64(len(target)), R2: 1 - sse/sst}
}

// meanCodes encodes b's encode states as consecutive subsets of Tokens and
// returns groups codes, each the mean of the encoder's mean latent over m
// consecutive subsets.
func (t *Trainer) meanCodes(b *Batch[float32], groups, m int) []float64 {
	z, tok := t.cfg.Arch.Latent, t.cfg.Tokens
	mean, _ := t.model.Encode(b.EncStates, b.EncBins, groups*m, tok)
	codes := make([]float64, groups*z)
	for j := range groups * m {
		for k := range z {
			codes[j/m*z+k] += float64(mean[j*z+k]) / float64(m)
		}
	}
	return codes
}

// identify encodes every reward on two disjoint sets of m subsets of
// held-out states each, and finds for each the nearest code of the second
// set.
func (t *Trainer) identify(rewards []Reward, m int, rng *rand.Rand) Identification {
	z, tok := t.cfg.Arch.Latent, t.cfg.Tokens
	a, b := make([]float64, len(rewards)*z), make([]float64, len(rewards)*z)
	chunkLen := max(1, evalChunk/(2*m))
	for start := 0; start < len(rewards); start += chunkLen {
		chunk := rewards[start:min(start+chunkLen, len(rewards))]
		// 2m Tokens distinct states per reward, encoded as 2m consecutive
		// subsets: the first m make one code, the last m the other.
		codes := t.meanCodes(t.evalBatch(chunk, 2*m*tok, 0, rng), 2*len(chunk), m)
		for s := range chunk {
			copy(a[(start+s)*z:(start+s+1)*z], codes[2*s*z:(2*s+1)*z])
			copy(b[(start+s)*z:(start+s+1)*z], codes[(2*s+1)*z:(2*s+2)*z])
		}
	}
	id := Identification{Subsets: m, States: m * tok, Rewards: len(rewards)}
	hit := make([]bool, len(rewards))
	for i := range rewards {
		best, at := math.Inf(1), -1
		for j := range rewards {
			if dist := sqDist(a[i*z:(i+1)*z], b[j*z:(j+1)*z]); dist < best {
				best, at = dist, j
			}
		}
		hit[i] = at == i
	}
	for _, f := range []Family{Linear, MLP, DualForm} {
		g := Identified{Family: f.String()}
		for i, r := range rewards {
			if r.Family == f {
				g.Rewards++
				if hit[i] {
					g.Fraction++
					id.Fraction++
				}
			}
		}
		if g.Rewards > 0 {
			g.Fraction /= float64(g.Rewards)
			id.ByFamily = append(id.ByFamily, g)
		}
	}
	id.Fraction /= float64(len(rewards))
	return id
}

// sqDist is the squared Euclidean distance between two codes.
func sqDist(a, b []float64) float64 {
	d := 0.0
	for k := range a {
		e := a[k] - b[k]
		d += e * e
	}
	return d
}
