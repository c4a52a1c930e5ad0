package dice

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// ValueConfig sets up a Value learner. DefaultValueConfig gives the
// project's values.
type ValueConfig struct {
	Gamma float64 `json:"gamma"`
	// Hidden are the hidden widths; empty makes V linear in the observation
	// (tabular for one-hot states).
	Hidden     []int         `json:"hidden"`
	Activation nn.Activation `json:"activation"`
	LR         float64       `json:"lr"`
	// Batch is the number of transitions per step, InitBatch the number of
	// initial states.
	Batch     int `json:"batch"`
	InitBatch int `json:"init_batch"`
	// ChunkRows bounds the rows per forward pass of the whole-set pass.
	ChunkRows int `json:"chunk_rows"`
	// Latent is the width of the latent z that conditions V(s, z); 0 for an
	// unconditioned V.
	Latent int `json:"latent"`
	// AbsorbingFalls makes a terminal transition's next state absorbing at
	// the set's lowest reward, worth min R / (1 - gamma), instead of worth
	// 0 as in the spec's delta = R + gamma (1 - terminal) V(s') - V(s)
	// (ours). With the discriminator's reward log(c / (1 - c)), negative
	// on most offline states, V is negative, so ending an episode early
	// looks like escaping the rest of it: on the paper-scale locomotion set
	// the weights of the spec's form collapsed onto a few falls of the
	// random behaviour (effective sample size 424,000 -> 30 within 150
	// iterations, random's share of the weight 0 -> 26%).
	AbsorbingFalls bool `json:"absorbing_falls,omitempty"`
	// RefreshRows, when positive and less than the set, makes the weight
	// pass an estimator (ours; the spec allows one whose error is
	// measured): each call re-evaluates V on one block of about RefreshRows
	// consecutive transitions, in turn, and reuses the values of the
	// others from earlier calls; delta and the softmax still cover the
	// whole set with the current reward. The first call evaluates all.
	// StaleError measures what this costs. 0 evaluates every row on every
	// call (exact).
	RefreshRows int `json:"refresh_rows,omitempty"`
	// MinESSShare, when positive, caps delta at its value at the top
	// MinESSShare of the set before the softmax (ours): the k = ceil(share
	// N) largest residuals all count as the k-th largest, so no transition
	// carries more than 1/k of the weight and the effective sample size is
	// at least k. Without it the weights of the paper-scale navigation set
	// fell onto a handful of transitions again and again (the
	// SMODICE-expert of seed 1: ESS under 2, one transition holding up to
	// 84% of the weight, in most stretches of 100 iterations after the
	// 800th), and the policy cloned those. 0 is the paper's softmax.
	MinESSShare float64 `json:"min_ess_share,omitempty"`
}

// DefaultValueConfig is gamma 0.99, 256-256 ReLU, Adam 3e-4, batch 8192.
func DefaultValueConfig() ValueConfig {
	return ValueConfig{
		Gamma: 0.99, Hidden: []int{256, 256}, Activation: nn.ReLU, LR: 3e-4,
		Batch: 8192, InitBatch: 8192, ChunkRows: 8192,
	}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("dice: bad configuration")

// ErrRewardLength reports a reward column that does not have one value per
// transition.
var ErrRewardLength = errors.New("dice: reward length differs from the number of transitions")

// Value learns V(s[, z]) by the KL dual on one offline set, with a reward
// set per iteration (SetReward), and gives the whole-set weights. It is not
// safe for concurrent use; independent learners may run side by side.
type Value struct {
	cfg    ValueConfig
	data   *dataset.Offline
	reward []float32
	init   []int
	rng    *rand.Rand

	V   *nn.Conditioned[float32]
	opt *nn.Adam[float32]

	// nextIsRow[i] says that transition i's next observation is transition
	// i+1's observation (every step inside an episode), so the weight pass
	// reuses V(s_{i+1}) instead of evaluating V on it a second time; ends
	// lists the other transitions, whose next observation it evaluates.
	nextIsRow []bool
	ends      []int
	// vObs is V on every observation and vEnd V on the next observation of
	// every transition of ends, as the weight passes left them; passes
	// counts the passes (with RefreshRows, the block to refresh next).
	vObs   []float32
	vEnd   []float32
	passes int
	gather []float32 // next observations the weight pass evaluates itself

	// fallBonus is what a terminal transition adds to its reward for the
	// value of its absorbing next state, gamma min R / (1 - gamma), with
	// AbsorbingFalls (else 0); set with the reward.
	fallBonus float64

	tape       nn.Tape[float32]
	in, dV     []float32
	r, notDone []float32
	deltaBatch []float64
	delta, w   []float64
}

// NewValue validates the data and builds a fresh network, drawing its
// initial parameters and, later, its batches from rng. Initial states are
// the episode starts of data. The reward must be set before the first step.
func NewValue(data *dataset.Offline, cfg ValueConfig, rng *rand.Rand) (*Value, error) {
	if cfg.Gamma <= 0 || cfg.Gamma >= 1 || cfg.LR <= 0 || cfg.Batch <= 0 || cfg.InitBatch <= 0 || cfg.ChunkRows <= 0 || cfg.Latent < 0 || cfg.RefreshRows < 0 || !(cfg.MinESSShare >= 0 && cfg.MinESSShare <= 1) {
		return nil, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	if err := data.Validate(); err != nil {
		return nil, err
	}
	v, err := nn.NewConditioned[float32](rng, append(append([]int{data.ObsDim}, cfg.Hidden...), 1), cfg.Latent, cfg.Activation, nn.Identity)
	if err != nil {
		return nil, fmt.Errorf("dice: value network: %w", err)
	}
	n, b, b0, d := data.Len(), cfg.Batch, cfg.InitBatch, data.ObsDim
	chained := chainedRows(data)
	var ends []int
	for i, c := range chained {
		if !c {
			ends = append(ends, i)
		}
	}
	return &Value{
		cfg: cfg, data: data, init: data.InitialStates(), rng: rng,
		V: v, opt: v.NewOptimiser(cfg.LR),
		in: make([]float32, (2*b+b0)*d), dV: make([]float32, 2*b+b0),
		r: make([]float32, b), notDone: make([]float32, b), deltaBatch: make([]float64, b),
		delta: make([]float64, n), w: make([]float64, n),
		nextIsRow: chained, ends: ends, vObs: make([]float32, n), vEnd: make([]float32, len(ends)),
		gather: make([]float32, cfg.ChunkRows*d),
	}, nil
}

// SetReward sets R for the steps and weight passes that follow: one finite
// value per transition. The learner keeps reward (it does not copy it).
func (v *Value) SetReward(reward []float32) error {
	if len(reward) != v.data.Len() {
		return fmt.Errorf("%w: %d rewards for %d transitions", ErrRewardLength, len(reward), v.data.Len())
	}
	if err := dataset.CheckFinite("reward", reward, 1); err != nil {
		return err
	}
	v.reward = reward
	v.fallBonus = 0
	if v.cfg.AbsorbingFalls {
		g := v.cfg.Gamma
		v.fallBonus = g * float64(slices.Min(reward)) / (1 - g)
	}
	return nil
}

// SetLatent sets z for the steps and weight passes that follow.
func (v *Value) SetLatent(z []float32) error { return v.V.SetLatent(z) }

// chainedRows reports for every transition whether its next observation is,
// bit for bit, the observation of the transition that follows it.
func chainedRows(data *dataset.Offline) []bool {
	n, d := data.Len(), data.ObsDim
	chained := make([]bool, n)
	for i := range n - 1 {
		chained[i] = slices.Equal(data.NextObs[i*d:(i+1)*d], data.Obs[(i+1)*d:(i+2)*d])
	}
	return chained
}

// dualLoss returns L = (1-gamma) mean_j v0_j + log mean_b exp(delta_b) with
// delta_b = r_b + gamma notDone_b vNext_b - v_b (delta is written to delta),
// and its gradient. With p = softmax(delta) over the batch,
//
//	dL/dv_b = -p_b,  dL/dvNext_b = gamma notDone_b p_b,  dL/dv0_j = (1-gamma)/B0.
func dualLoss[T nn.Float](gamma float64, r, notDone, v, vNext, v0 []T, delta []float64, gv, gvNext, gv0 []T) float64 {
	for b := range v {
		delta[b] = float64(r[b]) + gamma*float64(notDone[b])*float64(vNext[b]) - float64(v[b])
	}
	lme := nn.LogMeanExp(delta)
	for b, db := range delta {
		p := math.Exp(db-lme) / float64(len(delta))
		gv[b] = T(-p)
		gvNext[b] = T(gamma * float64(notDone[b]) * p)
	}
	mean0 := 0.0
	for _, x := range v0 {
		mean0 += float64(x)
	}
	mean0 /= float64(len(v0))
	for j := range gv0 {
		gv0[j] = T((1 - gamma) / float64(len(v0)))
	}
	return (1-gamma)*mean0 + lme
}

// gatherObs copies row i of src into row row of dst.
func gatherObs(dst, src []float32, d, i, row int) {
	copy(dst[row*d:(row+1)*d], src[i*d:(i+1)*d])
}

// ErrNoReward reports a step or weight pass before SetReward.
var ErrNoReward = errors.New("dice: no reward set")

// Step takes one Adam step on the dual objective with Batch transitions and
// InitBatch initial states drawn uniformly with replacement, and returns
// the batch loss.
func (v *Value) Step() (float64, error) {
	if v.reward == nil {
		return 0, ErrNoReward
	}
	b, b0, d := v.cfg.Batch, v.cfg.InitBatch, v.data.ObsDim
	for k := range b {
		i := v.rng.IntN(v.data.Len())
		gatherObs(v.in, v.data.Obs, d, i, k)
		gatherObs(v.in, v.data.NextObs, d, i, b+k)
		v.r[k] = v.reward[i]
		v.notDone[k] = 1
		if v.data.Terminal[i] {
			v.r[k] += float32(v.fallBonus)
			v.notDone[k] = 0
		}
	}
	for k := range b0 {
		gatherObs(v.in, v.data.Obs, d, v.init[v.rng.IntN(len(v.init))], 2*b+k)
	}
	net := v.V.Net
	net.ZeroGrad()
	out := net.Forward(&v.tape, v.in[:(2*b+b0)*d], 2*b+b0)
	loss := dualLoss(v.cfg.Gamma, v.r, v.notDone, out[:b], out[b:2*b], out[2*b:], v.deltaBatch,
		v.dV[:b], v.dV[b:2*b], v.dV[2*b:])
	net.Backward(&v.tape, v.dV, nil)
	v.V.Step(v.opt)
	return loss, nil
}

// Weights computes delta for every transition of the set and returns
// w = softmax(delta) over the whole set. V is evaluated in chunks of
// ChunkRows: once on every observation, and on a next observation only
// where it is not the following transition's observation (episode ends);
// with RefreshRows, only on the rows of this call's block. The slice is the
// learner's and is overwritten by the next call.
func (v *Value) Weights() ([]float64, error) {
	if v.reward == nil {
		return nil, ErrNoReward
	}
	from, to := v.block()
	v.evaluate(from, to, v.vObs, v.vEnd)
	v.passes++
	v.softmaxDelta(v.vObs, v.vEnd, v.delta, v.w)
	return v.w, nil
}

// block is the range of rows the next weight pass evaluates V on: all of
// them for an exact pass and on the first call, else the next of the
// blocks of about RefreshRows rows, in turn.
func (v *Value) block() (from, to int) {
	n := v.data.Len()
	if !v.keepsValues() || v.passes == 0 {
		return 0, n
	}
	blocks := (n + v.cfg.RefreshRows - 1) / v.cfg.RefreshRows
	b := (v.passes - 1) % blocks
	return b * n / blocks, (b + 1) * n / blocks
}

// evaluate writes V of the observations of rows [from, to) into vObs, and
// V of the next observations of the episode ends among them into vEnd.
func (v *Value) evaluate(from, to int, vObs, vEnd []float32) {
	d, net := v.data.ObsDim, v.V.Net
	for start := from; start < to; start += v.cfg.ChunkRows {
		rows := min(v.cfg.ChunkRows, to-start)
		copy(vObs[start:], net.Forward(&v.tape, v.data.Obs[start*d:(start+rows)*d], rows))
	}
	first, _ := slices.BinarySearch(v.ends, from)
	last, _ := slices.BinarySearch(v.ends, to)
	for start := first; start < last; start += v.cfg.ChunkRows {
		rows := min(v.cfg.ChunkRows, last-start)
		for k, i := range v.ends[start : start+rows] {
			gatherObs(v.gather, v.data.NextObs, d, i, k)
		}
		copy(vEnd[start:], net.Forward(&v.tape, v.gather[:rows*d], rows))
	}
}

// softmaxDelta sets delta = R + gamma V(s') - V(s) for every transition
// from the values in vObs and vEnd, and w = softmax(delta), with delta
// capped at its top MinESSShare (w is the selection's scratch space).
func (v *Value) softmaxDelta(vObs, vEnd []float32, delta, w []float64) {
	g, e := v.cfg.Gamma, 0
	for i := range delta {
		var next float64
		if v.nextIsRow[i] {
			next = g * float64(vObs[i+1])
		} else {
			next = g * float64(vEnd[e])
			e++
		}
		if v.data.Terminal[i] {
			next = v.fallBonus
		}
		delta[i] = float64(v.reward[i]) + next - float64(vObs[i])
	}
	if v.cfg.MinESSShare == 0 {
		nn.Softmax(delta, w)
		return
	}
	k := int(math.Ceil(v.cfg.MinESSShare * float64(len(delta))))
	copy(w, delta)
	top := kthLargest(w, k)
	for i, d := range delta {
		w[i] = min(d, top)
	}
	nn.Softmax(w, w)
}

// kthLargest returns the k-th largest of x (1 <= k <= len(x)), reordering
// x: a quickselect with the median of three as pivot, deterministic.
func kthLargest(x []float64, k int) float64 {
	lo, hi, want := 0, len(x)-1, k-1 // want: the index in descending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		if x[mid] > x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] > x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[mid] > x[hi] {
			x[mid], x[hi] = x[hi], x[mid]
		}
		pivot := x[hi] // the median of the three
		i, j := lo, hi
		for i <= j {
			for x[i] > pivot {
				i++
			}
			for x[j] < pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return x[want]
		}
	}
	return x[want]
}

// StaleError is the total variation distance (1/2 sum |w - w_exact|)
// between the weights of the last Weights call and the exact weights of the
// same call, with V evaluated on every row: what RefreshRows costs. It
// evaluates V on the whole set and leaves the learner as it was. Zero,
// without that pass, for a learner whose passes are exact.
func (v *Value) StaleError() (float64, error) {
	if v.passes == 0 {
		return 0, ErrNoReward
	}
	if !v.keepsValues() {
		return 0, nil
	}
	n := v.data.Len()
	vObs, vEnd := make([]float32, n), make([]float32, len(v.ends))
	v.evaluate(0, n, vObs, vEnd)
	delta, w := make([]float64, n), make([]float64, n)
	v.softmaxDelta(vObs, vEnd, delta, w)
	tv := 0.0
	for i, x := range w {
		tv += math.Abs(x - v.w[i])
	}
	return tv / 2, nil
}

// Delta returns the TD residuals of the last Weights call (the learner's
// slice).
func (v *Value) Delta() []float64 { return v.delta }

// ErrDiverged reports weights that are no longer a distribution: the value
// network's outputs overflowed or became NaN.
var ErrDiverged = errors.New("dice: training diverged")

// CheckWeights reports whether w is a distribution (non-negative, finite,
// summing to 1 within rounding), wrapping ErrDiverged if not.
func CheckWeights(w []float64) error {
	sum := 0.0
	for i, x := range w {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: w[%d] = %v", ErrDiverged, i, x)
		}
		sum += x
	}
	if math.Abs(sum-1) > 1e-6 {
		return fmt.Errorf("%w: weights sum to %v", ErrDiverged, sum)
	}
	return nil
}
