// Package wbc owns weighted behaviour cloning, the policy learner every
// algorithm of the trainer shares (SMODICE-expert, Dual-Force, DOI, plain
// BC): a tanh-squashed Gaussian policy pi(a | s[, z]), or a mixture of
// Gaussians (Config.Components), fitted to the offline actions by maximising
// sum_i w_i log pi(a_i | s_i, z) for weights w over the whole offline set.
// Batches are drawn with probability w (importance resampling), or w exp(k r)
// for a reward r when Config.Tilt is k, with w raised to 1/T when
// Config.Temperature is T, and every drawn sample counts once.
// An optional latent z is folded into the first layer's bias
// (nn.Conditioned), as the bank's skills.Policy does at deployment.
package wbc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// Config sets up a Learner. DefaultConfig gives the project's values.
type Config struct {
	Hidden     []int         `json:"hidden"`
	Activation nn.Activation `json:"activation"`
	LR         float64       `json:"lr"`
	// Batch is the number of transitions per step.
	Batch int `json:"batch"`
	// Latent is the width of the latent z that conditions pi(a | s, z); 0
	// for an unconditioned policy.
	Latent int `json:"latent"`
	// Average is the decay per step of an exponential moving average of the
	// policy's parameters kept beside them (Polyak-Ruppert averaging of the
	// iterates); the average, not the last iterate, is the policy a bank
	// deploys (State.Deployed). With a constant learning rate the iterates
	// keep moving by about a step's size; their average does not. The decay
	// is min(Average, (1+t)/(10+t)) at step t, so that early steps are not
	// tied to the initial parameters. 0 deploys the last iterate.
	Average float64 `json:"average,omitempty"`
	// Components is the number of Gaussians in the policy's mixture head
	// (nn.SquashedGaussian); 0 and 1 both mean a single Gaussian. A weighted
	// clone of routes round both sides of an obstacle needs more than one:
	// a single Gaussian fits the mean of the routes.
	Components int `json:"components,omitempty"`
	// Tilt, when positive, tilts the draws towards transitions of high
	// reward (ours): after SetTiltReward(r), SetWeights(w) draws transition
	// i with probability proportional to w_i exp(Tilt r_i). The DICE weights
	// say which transitions the skill's state-action distribution holds, not
	// which of them the skill would choose where the offline behaviours
	// overlap; on the start-region navigation set the SMODICE-expert's
	// weights put as much mass near the goal on behaviours that stop or
	// wander beside it as on the expert, and its clone stopped beside the
	// goal (docs/results.md). The methods tilt by the imitation reward r_E.
	// 0 is the paper's weighted cloning.
	Tilt float64 `json:"tilt,omitempty"`
	// Temperature T, when positive and not 1, draws transition i in
	// proportion to w_i^(1/T) instead of w_i (ours): for the DICE weights
	// w = softmax(delta), the draws of softmax(delta / T), the temperature
	// of advantage-weighted regression. Where the offline behaviours
	// overlap, the weights of a skill prefer the actions that lead its way
	// by a factor exp(delta difference); below 1 the temperature sharpens
	// that preference, so that a clone of a skill whose weights lean to one
	// route round an obstacle fits that route rather than the mean of the
	// routes (docs/results.md). 0 and 1 are the weights themselves.
	Temperature float64 `json:"temperature,omitempty"`
}

// DefaultConfig is 256-256 ReLU, batch 8192 (the training methods set their
// own, 1024), Adam 1e-3 with the parameters averaged at 0.99 (ours). At
// SMODICE's 3e-4 and the last iterate the policies were still undertrained
// after the few thousand steps the training methods give them: clones of the
// navigation expert stopped short of the goal (5,000 steps: 73% of 30
// rollouts, a median 0.14 m from it; at 1e-3 100%, 0.02 m), clones of a
// locomotion gait stood (the high gait after 5,000 steps: return 59 against
// 824 at 1e-3), and so did Dual-Force's locomotion skills on the gaits their
// weights held. The navigation SMODICE-expert did not improve (cmd's train
// smodice --help).
func DefaultConfig() Config {
	return Config{Hidden: []int{256, 256}, Activation: nn.ReLU, LR: 1e-3, Batch: 8192, Average: 0.99}
}

// Head is the policy head of cfg on net, a policy network of cfg for actDim
// actions (New's or Rebuild's).
func (cfg Config) Head(net *nn.Conditioned[float32], actDim int) *nn.SquashedGaussian[float32] {
	return &nn.SquashedGaussian[float32]{Net: net.Net, ActDim: actDim, Components: cfg.Components}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("wbc: bad configuration")

// ErrWeights reports weights Step cannot draw from.
var ErrWeights = errors.New("wbc: unusable weights")

// Learner fits one policy. It is not safe for concurrent use; independent
// learners may run side by side.
type Learner struct {
	cfg  Config
	data *dataset.Offline
	rng  *rand.Rand

	Net *nn.Conditioned[float32]
	// Pi is the policy head on Net.Net (observations only; the latent is
	// folded into the first layer's bias).
	Pi  *nn.SquashedGaussian[float32]
	opt *nn.Adam[float32]

	u, logJac  []float32 // unsquashed dataset actions
	cdf        []float64 // cumulative weights (SetWeights)
	tilt       []float64 // exp(Tilt (r_i - max r)) (SetTiltReward); nil when Tilt is 0
	rows       []int32   // when set, Step draws uniformly among these rows instead (SetRows)
	tape       nn.Tape[float32]
	obs, act   []float32
	jac, unitW []float32
	// avg is the moving average of the parameters (Config.Average; nil when
	// off), params the buffer Step reads the parameters into.
	avg, params []float32
}

// New validates the data and builds a fresh policy, drawing its initial
// parameters and, later, its batches from rng. A new learner draws
// uniformly (plain behaviour cloning) until SetWeights.
func New(data *dataset.Offline, cfg Config, rng *rand.Rand) (*Learner, error) {
	if cfg.LR <= 0 || cfg.Batch <= 0 || cfg.Latent < 0 || !(cfg.Average >= 0 && cfg.Average < 1) || cfg.Components < 0 || cfg.Components > skills.MaxComponents ||
		!(cfg.Tilt >= 0) || math.IsInf(cfg.Tilt, 1) || !(cfg.Temperature >= 0) || math.IsInf(cfg.Temperature, 1) {
		return nil, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	if err := data.Validate(); err != nil {
		return nil, err
	}
	sizes := append(append([]int{data.ObsDim}, cfg.Hidden...), skills.HeadOutputs(data.ActDim, cfg.Components))
	net, err := nn.NewConditioned[float32](rng, sizes, cfg.Latent, cfg.Activation, nn.Identity)
	if err != nil {
		return nil, fmt.Errorf("wbc: policy network: %w", err)
	}
	n, b := data.Len(), cfg.Batch
	l := &Learner{
		cfg: cfg, data: data, rng: rng,
		Net: net, Pi: cfg.Head(net, data.ActDim), opt: net.NewOptimiser(cfg.LR),
		u: make([]float32, len(data.Act)), logJac: make([]float32, n), cdf: make([]float64, n),
		obs: make([]float32, b*data.ObsDim), act: make([]float32, b*data.ActDim),
		jac: make([]float32, b), unitW: make([]float32, b),
	}
	l.Pi.SpreadMeans(rng)
	if cfg.Average > 0 {
		l.avg = net.Params()
	}
	nn.Unsquash(data.Act, data.ActDim, l.u, l.logJac)
	for k := range l.unitW {
		l.unitW[k] = 1 / float32(b) // every drawn sample counts once: see Step
	}
	for i := range l.cdf {
		l.cdf[i] = float64(i + 1) // uniform draws until SetWeights
	}
	return l, nil
}

// SetLatent sets z for the steps that follow.
func (l *Learner) SetLatent(z []float32) error { return l.Net.SetLatent(z) }

// SetTiltReward sets the reward r (one value per transition, finite) that
// Config.Tilt tilts the draws of every later SetWeights by. With Tilt 0 it
// does nothing. The factors are relative to the largest reward, so that
// none overflows; a row whose factor underflows to 0 is never drawn.
func (l *Learner) SetTiltReward(r []float32) error {
	if l.cfg.Tilt == 0 {
		return nil
	}
	if len(r) != l.data.Len() {
		return fmt.Errorf("%w: %d tilt rewards for %d transitions", ErrWeights, len(r), l.data.Len())
	}
	if err := dataset.CheckFinite("tilt reward", r, 1); err != nil {
		return err
	}
	top := float64(slices.Max(r))
	l.tilt = make([]float64, len(r))
	for i, x := range r {
		l.tilt[i] = math.Exp(l.cfg.Tilt * (float64(x) - top))
	}
	return nil
}

// SetWeights fixes the distribution Step draws transitions from: w over
// the whole set (non-negative, not all zero; it need not sum to 1), raised
// to 1/Config.Temperature and tilted by Config.Tilt. The learner keeps its
// cumulative sums, not w. On error the distribution is unchanged.
func (l *Learner) SetWeights(w []float64) error {
	if len(w) != l.data.Len() {
		return fmt.Errorf("%w: %d weights for %d transitions", ErrWeights, len(w), l.data.Len())
	}
	if l.cfg.Tilt > 0 && l.tilt == nil {
		return fmt.Errorf("%w: a tilt of %v and no reward to tilt by (SetTiltReward)", ErrWeights, l.cfg.Tilt)
	}
	top := 0.0
	for i, x := range w {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: w[%d] = %v", ErrWeights, i, x)
		}
		top = max(top, x)
	}
	sum := 0.0
	for i, x := range w {
		sum += l.drawWeight(i, x, top)
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return fmt.Errorf("%w: they sum to %v (tilted by %v, at temperature %v)", ErrWeights, sum, l.cfg.Tilt, l.cfg.Temperature)
	}
	sum = 0
	for i, x := range w {
		sum += l.drawWeight(i, x, top)
		l.cdf[i] = sum
	}
	l.rows = nil
	return nil
}

// drawWeight is how often transition i of weight w is drawn, relative to
// the others: w at Temperature 0 or 1, else (w / top)^(1/T), top the largest
// weight, so that no power overflows; then tilted.
func (l *Learner) drawWeight(i int, w, top float64) float64 {
	if t := l.cfg.Temperature; t > 0 && t != 1 {
		w = math.Pow(w/top, 1/t)
	}
	if l.tilt != nil {
		w *= l.tilt[i]
	}
	return w
}

// SetRows fixes the distribution Step draws from to the uniform one over
// rows (a row listed twice is drawn twice as often): a sample of some weights,
// e.g. Resample's, which is far smaller than the weights themselves. The
// learner keeps rows until the next SetWeights or SetRows. On error the
// distribution is unchanged.
func (l *Learner) SetRows(rows []int32) error {
	if len(rows) == 0 {
		return fmt.Errorf("%w: no rows to draw from", ErrWeights)
	}
	for _, r := range rows {
		if r < 0 || int(r) >= l.data.Len() {
			return fmt.Errorf("%w: row %d of a set of %d transitions", ErrWeights, r, l.data.Len())
		}
	}
	l.rows = rows
	return nil
}

// Resample draws k rows from the distribution of the last SetWeights (or
// the uniform one before any; SetRows does not change it): ResampleCDF of
// the learner's cumulative weights.
func (l *Learner) Resample(k int) []int32 { return ResampleCDF(l.cdf, k) }

// ResampleCDF draws k rows from the distribution whose cumulative weights
// are cdf (non-decreasing, last > 0) by systematic resampling: the k evenly
// spaced quantiles (j + 1/2) / k of the total, no generator. Each row appears
// about k p_i times, rows of zero weight never, so a uniform draw from them
// (SetRows) stands in for a draw from the distribution.
func ResampleCDF(cdf []float64, k int) []int32 {
	total := cdf[len(cdf)-1]
	rows := make([]int32, 0, k)
	i := 0
	for j := range k {
		u := (float64(j) + 0.5) / float64(k) * total
		for cdf[i] < u && i < len(cdf)-1 {
			i++
		}
		rows = append(rows, int32(i))
	}
	return rows
}

// draw returns a transition drawn with probability w_i / sum w (or
// uniformly from the rows of SetRows). u is in (0, total], so the first
// cumulative sum >= u belongs to a transition of positive weight.
func (l *Learner) draw() int {
	if l.rows != nil {
		return int(l.rows[l.rng.IntN(len(l.rows))])
	}
	total := l.cdf[len(l.cdf)-1]
	u := total * (1 - l.rng.Float64())
	i, _ := slices.BinarySearch(l.cdf, u)
	return min(i, len(l.cdf)-1)
}

// Step takes one Adam step: it draws Batch transitions with probability w
// (importance resampling) and maximises their mean log-likelihood, an
// unbiased estimate of sum_{D_O} w log pi(a|s) whose every sample carries
// weight 1; uniform draws weighted by N w_b would give the same gradient in
// expectation with a variance that grows as the weights concentrate. It
// returns the batch loss -(1/B) sum_b log pi(a_b|s_b).
func (l *Learner) Step() float64 {
	b, a, d := l.cfg.Batch, l.data.ActDim, l.data.ObsDim
	for k := range b {
		i := l.draw()
		copy(l.obs[k*d:(k+1)*d], l.data.Obs[i*d:(i+1)*d])
		copy(l.act[k*a:(k+1)*a], l.u[i*a:(i+1)*a])
		l.jac[k] = l.logJac[i]
	}
	l.Net.Net.ZeroGrad()
	loss := l.Pi.WeightedNLL(&l.tape, l.obs, l.act, l.jac, l.unitW, b)
	l.Net.Step(l.opt)
	l.average()
	return loss
}

// average moves the parameters' average towards the parameters after a step.
func (l *Learner) average() {
	if l.avg == nil {
		return
	}
	t := float64(l.opt.Steps())
	d := float32(min(l.cfg.Average, (1+t)/(10+t)))
	l.params = l.Net.AppendParams(l.params[:0])
	for j, p := range l.params {
		l.avg[j] = d*l.avg[j] + (1-d)*p
	}
}

// State is everything of a Learner that changes while it trains (the
// generator is the caller's).
type State struct {
	Params           []float32
	Adam, LatentAdam nn.AdamState[float32]
	// Average is the parameters' moving average (Config.Average), nil when
	// the learner keeps none.
	Average []float32
}

// Deployed is the parameters a bank deploys: the average where there is
// one, else the last iterate.
func (s *State) Deployed() []float32 {
	if s.Average != nil {
		return s.Average
	}
	return s.Params
}

// State returns a copy of the learner's state.
func (l *Learner) State() State {
	return State{Params: l.Net.Params(), Adam: l.opt.State(), LatentAdam: l.Net.LatentAdam(), Average: slices.Clone(l.avg)}
}

// ErrState reports a state that does not fit the learner.
var ErrState = errors.New("wbc: state does not fit this learner")

// Restore replaces the learner's state with a copy of s. A state must carry
// an average exactly when the learner keeps one. On error the learner is
// unchanged.
func (l *Learner) Restore(s State) error {
	if (l.avg == nil) != (s.Average == nil) || len(s.Average) != len(l.avg) {
		return fmt.Errorf("%w: an average of %d parameters, the learner keeps one of %d", ErrState, len(s.Average), len(l.avg))
	}
	for i, v := range s.Average {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: non-finite averaged parameter %v at %d", ErrState, v, i)
		}
	}
	if err := l.Net.Restore(l.opt, s.Params, s.Adam, s.LatentAdam); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	copy(l.avg, s.Average)
	return nil
}

// Deployed returns the network a bank deploys: the learner's own (sharing
// its parameters) when it keeps no average, else a copy holding the average
// (its latent input unset: a bank stores the first layer over [s ; z]).
func (l *Learner) Deployed() (*nn.Conditioned[float32], error) {
	if l.avg == nil {
		return l.Net, nil
	}
	return Rebuild(l.data.ObsDim, l.data.ActDim, l.cfg, l.avg)
}

// ErrParams reports parameters that do not fit the network they are for.
var ErrParams = errors.New("wbc: parameters do not fit the policy")

// Rebuild builds the policy network of cfg for obsDim -> actDim and loads
// params (laid out as State's Params). The sizes are checked against
// len(params) before anything is allocated, so damaged parameters cannot
// ask for a huge network.
func Rebuild(obsDim, actDim int, cfg Config, params []float32) (*nn.Conditioned[float32], error) {
	sizes := append(append([]int{obsDim}, cfg.Hidden...), skills.HeadOutputs(actDim, cfg.Components))
	if cfg.Latent < 0 || cfg.Latent > len(params) || len(sizes) < 2 || sizes[1] <= 0 || sizes[1] > len(params) {
		return nil, fmt.Errorf("%w: a %v policy with a %d-value latent does not have %d parameters", ErrParams, sizes, cfg.Latent, len(params))
	}
	want := cfg.Latent * sizes[1]
	for i := 1; i < len(sizes); i++ {
		in, out := sizes[i-1], sizes[i]
		if in <= 0 || out <= 0 || in > len(params) || out > len(params) || want+(in+1)*out > len(params) {
			return nil, fmt.Errorf("%w: a %v policy with a %d-value latent does not have %d parameters", ErrParams, sizes, cfg.Latent, len(params))
		}
		want += (in + 1) * out
	}
	if want != len(params) {
		return nil, fmt.Errorf("%w: %d parameters, a %v network with a %d-value latent has %d", ErrParams, len(params), sizes, cfg.Latent, want)
	}
	net, err := nn.NewConditioned[float32](rand.New(rand.NewPCG(0, 0)), sizes, cfg.Latent, cfg.Activation, nn.Identity)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrParams, err)
	}
	if err := net.SetParams(params); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrParams, err)
	}
	return net, nil
}
