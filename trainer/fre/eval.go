package fre

import (
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/skills"
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
	Identify int    `json:"identify"`
	Seed     uint64 `json:"seed"`
}

// DefaultEvalConfig scores every function of the prior, 200 Dual-Force-form
// rewards and 20 new linear and MLP functions on 64 held-out states each,
// and identifies 200 unseen rewards.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Decode: 64, DualForm: 200, NewLinear: 20, NewMLP: 20, Identify: 200, Seed: 7}
}

// Score is the reconstruction of a set of rewards: the mean squared error
// of the decoded normalised rewards and R^2 = 1 - SSE/SST with SST about the
// mean of all their targets.
type Score struct {
	Family  string  `json:"family"`
	Rewards int     `json:"rewards"`
	MSE     float64 `json:"mse"`
	R2      float64 `json:"r2"`
}

// Report is an evaluation of the encoder and decoder on held-out states.
type Report struct {
	// Seen scores the prior's own functions (linear, MLP, hand-made) and
	// fresh Dual-Force-form rewards.
	Seen []Score `json:"seen"`
	// Unseen scores random functions the encoder was never trained on.
	Unseen []Score `json:"unseen"`
	// Identification is the fraction of unseen rewards whose latent from one
	// subset of held-out states has, among the latents of all rewards from
	// a disjoint subset, the latent of the same reward as nearest
	// neighbour (Euclidean).
	Identification        float64 `json:"identification"`
	IdentificationRewards int     `json:"identification_rewards"`
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
	// rest to decode (identification: a second Tokens).
	cfg.Decode = min(cfg.Decode, len(t.held)-t.cfg.Tokens)
	if 2*t.cfg.Tokens > len(t.held) {
		cfg.Identify = 0
	}
	for _, f := range []Family{Linear, MLP, HandMade} {
		if fam := t.prior.Families[f]; len(fam) > 0 {
			rep.Seen = append(rep.Seen, t.score(f.String(), fam, cfg.Decode, rng))
		}
	}
	var df []Reward
	for range cfg.DualForm {
		df = append(df, t.prior.DualFormReward(rng))
	}
	if len(df) > 0 {
		rep.Seen = append(rep.Seen, t.score(DualForm.String(), df, cfg.Decode, rng))
	}
	nLin, nMLP := max(cfg.NewLinear, cfg.Identify/4), max(cfg.NewMLP, cfg.Identify/4)
	lin, mlp := t.prior.RandomFunctions(rng, nLin, nMLP)
	if cfg.NewLinear > 0 {
		rep.Unseen = append(rep.Unseen, t.score(Linear.String(), lin[:cfg.NewLinear], cfg.Decode, rng))
	}
	if cfg.NewMLP > 0 {
		rep.Unseen = append(rep.Unseen, t.score(MLP.String(), mlp[:cfg.NewMLP], cfg.Decode, rng))
	}
	if cfg.Identify > 0 {
		ids := append(append([]Reward(nil), lin[:cfg.Identify/4]...), mlp[:cfg.Identify/4]...)
		for len(ids) < cfg.Identify {
			ids = append(ids, t.prior.DualFormReward(rng))
		}
		rep.Identification = t.identify(ids, rng)
		rep.IdentificationRewards = len(ids)
	}
	return rep
}

// evalBatch fills a batch for rewards on held-out states, decode states
// per reward.
func (t *Trainer) evalBatch(rewards []Reward, decode int, rng *rand.Rand) *Batch[float32] {
	d, n := t.prior.Src.Dim, len(rewards)
	b := &Batch[float32]{
		Sets: n, Tokens: t.cfg.Tokens, Decode: decode,
		EncStates: make([]float32, n*t.cfg.Tokens*d), EncBins: make([]int32, n*t.cfg.Tokens),
		DecStates: make([]float32, n*decode*d), DecRewards: make([]float32, n*decode),
	}
	for s := range rewards {
		t.fill(b, s, &rewards[s], t.held, rng)
	}
	return b
}

// score reconstructs every reward from the posterior mean of one encode set.
func (t *Trainer) score(name string, rewards []Reward, decode int, rng *rand.Rand) Score {
	var pred, target []float64
	for start := 0; start < len(rewards); start += evalChunk {
		chunk := rewards[start:min(start+evalChunk, len(rewards))]
		b := t.evalBatch(chunk, decode, rng)
		mean, _ := t.model.Encode(b.EncStates, b.EncBins, b.Sets, b.Tokens)
		for i, p := range t.model.Decode(mean, b.DecStates, b.Sets, b.Decode) {
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
	return Score{Family: name, Rewards: len(rewards), MSE: sse / float64(len(target)), R2: 1 - sse/sst}
}

// identify encodes every reward on two disjoint subsets of held-out states
// and returns the fraction whose nearest neighbour across subsets is itself.
func (t *Trainer) identify(rewards []Reward, rng *rand.Rand) float64 {
	z := t.cfg.Arch.Latent
	codes := func() ([]float32, []float32) {
		var a, b []float32
		for start := 0; start < len(rewards); start += evalChunk {
			chunk := rewards[start:min(start+evalChunk, len(rewards))]
			// Tokens encode states and Tokens more (the "decode" part) make
			// the disjoint second subset.
			bt := t.evalBatch(chunk, t.cfg.Tokens, rng)
			mean, _ := t.model.Encode(bt.EncStates, bt.EncBins, bt.Sets, bt.Tokens)
			a = append(a, mean...)
			bins := make([]int32, len(bt.DecRewards))
			for i, v := range bt.DecRewards {
				bins[i] = int32(skills.RewardBin(v, 1, t.cfg.Arch.Bins)) // v is normalised already
			}
			mean, _ = t.model.Encode(bt.DecStates, bins, bt.Sets, bt.Decode)
			b = append(b, mean...)
		}
		return a, b
	}
	a, b := codes()
	hits := 0
	for i := range rewards {
		best, at := math.Inf(1), -1
		for j := range rewards {
			d := 0.0
			for k := range z {
				e := float64(a[i*z+k] - b[j*z+k])
				d += e * e
			}
			if d < best {
				best, at = d, j
			}
		}
		if at == i {
			hits++
		}
	}
	return float64(hits) / float64(len(rewards))
}
