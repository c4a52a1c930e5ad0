package dice

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// Config sets up a Trainer. DefaultConfig gives the project's values.
type Config struct {
	Gamma float64
	// ValueHidden and PolicyHidden are hidden widths; an empty ValueHidden
	// makes V linear in the observation (tabular for one-hot features).
	ValueHidden, PolicyHidden []int
	Activation                nn.Activation
	ValueLR, PolicyLR         float64
	// Batch is the number of transitions per value and policy step,
	// InitBatch the number of initial states per value step.
	Batch, InitBatch int
	// ValueSteps and PolicySteps are gradient steps per Iterate. Each
	// Iterate also makes one pass over the whole set for the weights, which
	// costs about as much as N/(3*Batch) value steps (V runs once per
	// observation: a next observation inside an episode is the following
	// transition's observation).
	ValueSteps, PolicySteps int
	// ChunkRows bounds the rows per forward pass of the whole-set pass.
	ChunkRows int
	Seed      uint64
}

// DefaultConfig is gamma 0.99, V and pi 256-256 ReLU, Adam 3e-4, batch 8192,
// one value and one policy step per iteration (the paper's Algorithm 1).
func DefaultConfig() Config {
	return Config{
		Gamma: 0.99, ValueHidden: []int{256, 256}, PolicyHidden: []int{256, 256}, Activation: nn.ReLU,
		ValueLR: 3e-4, PolicyLR: 3e-4, Batch: 8192, InitBatch: 8192,
		ValueSteps: 1, PolicySteps: 1, ChunkRows: 8192, Seed: 1,
	}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("dice: bad configuration")

// ErrRewardLength reports a reward column that does not have one value per
// transition.
var ErrRewardLength = errors.New("dice: reward length differs from the number of transitions")

// Trainer runs DICE on one offline set with one fixed reward. It is not safe
// for concurrent use; independent trainers may run side by side.
type Trainer struct {
	cfg    Config
	data   *dataset.Offline
	reward []float32
	init   []int
	src    *rand.PCG // rng's source, kept so a checkpoint can save its state
	rng    *rand.Rand

	V     *nn.MLP[float32]
	Pi    *nn.SquashedGaussian[float32]
	vOpt  *nn.Adam[float32]
	piOpt *nn.Adam[float32]

	u, logJac []float32 // unsquashed dataset actions
	// nextIsRow[i] says that transition i's next observation is transition
	// i+1's observation (every step inside an episode), so the weight pass
	// reuses V(s_{i+1}) instead of evaluating V on it a second time.
	nextIsRow []bool
	vObs      []float32 // V on every observation, from the weight pass
	gather    []float32 // next observations the weight pass evaluates itself
	gatherIdx []int

	vTape, piTape nn.Tape[float32]
	vIn, dV       []float32
	r, notDone    []float32
	deltaBatch    []float64
	piObs, piU    []float32
	piJac, piW    []float32
	delta, w      []float64
	cdf           []float64 // cumulative policy weights (SetPolicyWeights)
	iteration     int
}

// New validates the data and the reward (one value per transition, finite)
// and builds fresh networks.
func New(data *dataset.Offline, reward []float32, cfg Config) (*Trainer, error) {
	if cfg.Gamma <= 0 || cfg.Gamma >= 1 || cfg.ValueLR <= 0 || cfg.PolicyLR <= 0 || cfg.Batch <= 0 ||
		cfg.InitBatch <= 0 || cfg.ValueSteps < 0 || cfg.PolicySteps < 0 || cfg.ChunkRows <= 0 {
		return nil, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	if err := data.Validate(); err != nil {
		return nil, err
	}
	n := data.Len()
	if len(reward) != n {
		return nil, fmt.Errorf("%w: %d rewards for %d transitions", ErrRewardLength, len(reward), n)
	}
	if err := dataset.CheckFinite("reward", reward, 1); err != nil {
		return nil, err
	}
	src := rand.NewPCG(cfg.Seed, 0xd1ce)
	rng := rand.New(src)
	v, err := nn.NewMLP[float32](rng, append(append([]int{data.ObsDim}, cfg.ValueHidden...), 1), cfg.Activation, nn.Identity)
	if err != nil {
		return nil, fmt.Errorf("dice: value network: %w", err)
	}
	pi, err := nn.NewSquashedGaussian[float32](rng, data.ObsDim, cfg.PolicyHidden, cfg.Activation, data.ActDim)
	if err != nil {
		return nil, fmt.Errorf("dice: policy network: %w", err)
	}
	b, b0, d := cfg.Batch, cfg.InitBatch, data.ObsDim
	t := &Trainer{
		cfg: cfg, data: data, reward: reward, init: data.InitialStates(), src: src, rng: rng,
		V: v, Pi: pi,
		vOpt:  nn.NewAdam[float32](len(v.Params()), cfg.ValueLR),
		piOpt: nn.NewAdam[float32](len(pi.Net.Params()), cfg.PolicyLR),
		u:     make([]float32, len(data.Act)), logJac: make([]float32, n),
		vIn: make([]float32, (2*b+b0)*d), dV: make([]float32, 2*b+b0),
		r: make([]float32, b), notDone: make([]float32, b), deltaBatch: make([]float64, b),
		piObs: make([]float32, b*d), piU: make([]float32, b*data.ActDim),
		piJac: make([]float32, b), piW: make([]float32, b),
		delta: make([]float64, n), w: make([]float64, n), cdf: make([]float64, n),
		nextIsRow: chainedRows(data), vObs: make([]float32, n),
		gather: make([]float32, cfg.ChunkRows*d), gatherIdx: make([]int, 0, cfg.ChunkRows),
	}
	nn.Unsquash(data.Act, data.ActDim, t.u, t.logJac)
	for k := range t.piW {
		t.piW[k] = 1 / float32(b) // every drawn sample counts once: see PolicyStep
	}
	for i := range t.cdf {
		t.cdf[i] = float64(i + 1) // uniform draws until SetPolicyWeights
	}
	return t, nil
}

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

func (t *Trainer) gatherObs(dst, src []float32, i, row int) {
	d := t.data.ObsDim
	copy(dst[row*d:(row+1)*d], src[i*d:(i+1)*d])
}

// ValueStep takes one Adam step on the dual objective with Batch transitions
// and InitBatch initial states drawn uniformly with replacement, and returns
// the batch loss.
func (t *Trainer) ValueStep() float64 {
	b, b0, d := t.cfg.Batch, t.cfg.InitBatch, t.data.ObsDim
	for k := range b {
		i := t.rng.IntN(t.data.Len())
		t.gatherObs(t.vIn, t.data.Obs, i, k)
		t.gatherObs(t.vIn, t.data.NextObs, i, b+k)
		t.r[k] = t.reward[i]
		t.notDone[k] = 1
		if t.data.Terminal[i] {
			t.notDone[k] = 0
		}
	}
	for k := range b0 {
		t.gatherObs(t.vIn, t.data.Obs, t.init[t.rng.IntN(len(t.init))], 2*b+k)
	}
	t.V.ZeroGrad()
	out := t.V.Forward(&t.vTape, t.vIn[:(2*b+b0)*d], 2*b+b0)
	loss := dualLoss(t.cfg.Gamma, t.r, t.notDone, out[:b], out[b:2*b], out[2*b:], t.deltaBatch,
		t.dV[:b], t.dV[b:2*b], t.dV[2*b:])
	t.V.Backward(&t.vTape, t.dV, nil)
	t.vOpt.Step(t.V.Params(), t.V.Grads())
	return loss
}

// Weights computes delta for every transition of the set and returns
// w = softmax(delta) over the whole set. V is evaluated in chunks of
// ChunkRows: once on every observation, and on a next observation only
// where it is not the following transition's observation (episode ends).
// The slice is the trainer's and is overwritten by the next call.
func (t *Trainer) Weights() []float64 {
	n, d, g := t.data.Len(), t.data.ObsDim, t.cfg.Gamma
	for start := 0; start < n; start += t.cfg.ChunkRows {
		rows := min(t.cfg.ChunkRows, n-start)
		copy(t.vObs[start:], t.V.Forward(&t.vTape, t.data.Obs[start*d:(start+rows)*d], rows))
	}
	setDelta := func(i int, vNext float32) {
		notDone := 1.0
		if t.data.Terminal[i] {
			notDone = 0
		}
		t.delta[i] = float64(t.reward[i]) + g*notDone*float64(vNext) - float64(t.vObs[i])
	}
	flush := func() {
		if len(t.gatherIdx) == 0 {
			return
		}
		vNext := t.V.Forward(&t.vTape, t.gather[:len(t.gatherIdx)*d], len(t.gatherIdx))
		for k, i := range t.gatherIdx {
			setDelta(i, vNext[k])
		}
		t.gatherIdx = t.gatherIdx[:0]
	}
	for i := range n {
		if t.nextIsRow[i] {
			setDelta(i, t.vObs[i+1])
			continue
		}
		t.gatherObs(t.gather, t.data.NextObs, i, len(t.gatherIdx))
		t.gatherIdx = append(t.gatherIdx, i)
		if len(t.gatherIdx) == t.cfg.ChunkRows {
			flush()
		}
	}
	flush()
	nn.Softmax(t.delta, t.w)
	return t.w
}

// SetPolicyWeights fixes the distribution PolicyStep draws transitions
// from: w over the whole set (non-negative, not all zero; it need not sum
// to 1). The trainer keeps its cumulative sums, not w. A new trainer draws
// uniformly (behaviour cloning); on error the distribution is unchanged.
func (t *Trainer) SetPolicyWeights(w []float64) error {
	if len(w) != t.data.Len() {
		return fmt.Errorf("%w: %d weights for %d transitions", ErrPolicyWeights, len(w), t.data.Len())
	}
	sum := 0.0
	for i, x := range w {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: w[%d] = %v", ErrPolicyWeights, i, x)
		}
		sum += x
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return fmt.Errorf("%w: they sum to %v", ErrPolicyWeights, sum)
	}
	sum = 0
	for i, x := range w {
		sum += x
		t.cdf[i] = sum
	}
	return nil
}

// ErrPolicyWeights reports weights PolicyStep cannot draw from.
var ErrPolicyWeights = errors.New("dice: unusable policy weights")

// drawWeighted returns a transition drawn with probability w_i / sum w.
// u is in (0, total], so the first cumulative sum >= u belongs to a
// transition of positive weight.
func (t *Trainer) drawWeighted() int {
	total := t.cdf[len(t.cdf)-1]
	u := total * (1 - t.rng.Float64())
	i, _ := slices.BinarySearch(t.cdf, u)
	return min(i, len(t.cdf)-1)
}

// PolicyStep takes one Adam step of weighted behaviour cloning on the
// weights of the last SetPolicyWeights: it draws Batch transitions with
// probability w (importance resampling) and maximises their mean
// log-likelihood, an unbiased estimate of sum_{D_O} w log pi(a|s) whose
// every sample carries weight 1; uniform draws weighted by N w_b would give
// the same gradient in expectation with a variance that grows as the
// weights concentrate. It returns the batch loss -(1/B) sum_b log pi(a_b|s_b).
func (t *Trainer) PolicyStep() float64 {
	b, a := t.cfg.Batch, t.data.ActDim
	for k := range b {
		i := t.drawWeighted()
		t.gatherObs(t.piObs, t.data.Obs, i, k)
		copy(t.piU[k*a:(k+1)*a], t.u[i*a:(i+1)*a])
		t.piJac[k] = t.logJac[i]
	}
	t.Pi.Net.ZeroGrad()
	loss := t.Pi.WeightedNLL(&t.piTape, t.piObs, t.piU, t.piJac, t.piW, b)
	t.piOpt.Step(t.Pi.Net.Params(), t.Pi.Net.Grads())
	return loss
}

// Diagnostics describe one iteration.
type Diagnostics struct {
	Iteration             int
	ValueLoss, PolicyLoss float64 // of the last step of the iteration
	Weights               WeightStats
}

// LogValue lets Diagnostics be logged as one slog group.
func (d Diagnostics) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("iteration", d.Iteration),
		slog.Float64("value_loss", d.ValueLoss),
		slog.Float64("policy_loss", d.PolicyLoss),
		slog.Float64("ess", d.Weights.ESS),
		slog.Float64("max_w", d.Weights.Max),
		slog.Float64("kl", d.Weights.KL),
	)
}

// ErrDiverged reports weights that are no longer a distribution: the value
// network's outputs overflowed or became NaN.
var ErrDiverged = errors.New("dice: training diverged")

// Iterate runs ValueSteps value steps, one whole-set weight pass and
// PolicySteps policy steps drawn by those weights, and returns the
// diagnostics and the weights (the trainer's slice, see Weights).
func (t *Trainer) Iterate() (Diagnostics, []float64, error) {
	t.iteration++
	diag := Diagnostics{Iteration: t.iteration}
	for range t.cfg.ValueSteps {
		diag.ValueLoss = t.ValueStep()
	}
	w := t.Weights()
	if err := t.SetPolicyWeights(w); err != nil {
		return diag, w, fmt.Errorf("%w at iteration %d: %w", ErrDiverged, t.iteration, err)
	}
	for range t.cfg.PolicySteps {
		diag.PolicyLoss = t.PolicyStep()
	}
	diag.Weights = Summarise(w)
	return diag, w, nil
}
