package dualforce

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// Value is one skill's value learner (dice.Value): V(s, z) by the KL dual
// with a reward and a latent set per iteration, and the whole-set weights
// softmax(delta).
type Value interface {
	SetReward(reward []float32) error
	SetLatent(z []float32) error
	Step() (float64, error)
	Weights() ([]float64, error)
}

// Policy is one skill's weighted-BC policy learner (wbc.Learner):
// pi(a | s, z) fitted to the offline actions drawn by weight, or drawn
// uniformly from a sample of rows of earlier weights (rehearsal) that
// Resample takes from the distribution of the last SetWeights.
type Policy interface {
	SetLatent(z []float32) error
	SetWeights(w []float64) error
	SetRows(rows []int32) error
	Resample(k int) []int32
	Step() float64
}

// Encoder is the frozen FRE encoder over the offline states: the mean
// latent of a reward (one value per offline transition) over m random
// subsets of t states, in a new slice. Each skill has its own (they run side
// by side).
type Encoder interface {
	Encode(reward []float32) ([]float32, error)
}

// Skill is one skill's learners. Their networks are the skill's own.
type Skill struct {
	Value   Value
	Policy  Policy
	Encoder Encoder
}

// Config sets up a Loop. DefaultConfig gives the project's values.
type Config struct {
	// L0 is the VdW equilibrium distance, Eps the imitation-constraint
	// bound phi_i <= Eps.
	L0  float64 `json:"l0"`
	Eps float64 `json:"eps"`
	// MuInit is every multiplier's start, MuLR the step size of its
	// gradient descent (ours: plain steps, not Adam, whose steps have size
	// about lr whatever the violation).
	MuInit float64 `json:"mu_init"`
	MuLR   float64 `json:"mu_lr"`
	// MuKP, when positive, adds a proportional term to the multiplier (ours, not the paper's;
	// a PI controller as in Stooke et al.'s PID Lagrangian): skill i's imitation share is
	// sigmoid(mu_i + MuKP (phi_i - Eps)) with phi_i its latest constraint estimate, so a
	// violation raises the share at once instead of through mu's slow integral, which lets the
	// diversity term take over while the constraint holds and then overshoots it. 0 is the
	// paper's multiplier.
	MuKP float64 `json:"mu_kp,omitempty"`
	// BetaClip, when positive, clips each skill's VdW reward beta to its
	// mean +- BetaClip standard deviations over the offline set (ours, an
	// experiment): beta is linear in the features, and the random
	// behaviour's most extreme states drew a skill whose reward was mostly
	// beta onto a few transitions (ESS about 2000 -> 24). 0 is the paper's
	// beta.
	BetaClip float64 `json:"beta_clip,omitempty"`
	// MinAlpha floors the Polyak rate alpha_k = max(1/k, MinAlpha) (ours).
	MinAlpha float64 `json:"min_alpha"`
	// ValueSteps and PolicySteps are gradient steps per skill and outer
	// iteration.
	ValueSteps  int `json:"value_steps"`
	PolicySteps int `json:"policy_steps"`
	// RehearsalSteps, when positive, adds that many policy steps per
	// iteration on an earlier latent of the skill with a sample of the
	// weights of its iteration (ours): a policy fitted only to each
	// iteration's latent forgets what the skill's older latents meant,
	// and the bank keeps every one of them. The samples are RehearsalRows
	// rows each (Policy.Resample), kept for at most RehearsalKeep iterations
	// spread evenly over the run so far (see snapshotStride); the steps
	// take them in turn.
	RehearsalSteps int `json:"rehearsal_steps,omitempty"`
	RehearsalRows  int `json:"rehearsal_rows,omitempty"`
	RehearsalKeep  int `json:"rehearsal_keep,omitempty"`
	// DiversityOff fixes sigmoid(mu) = 1 (R = r_E, no multiplier steps):
	// SMODICE-expert with n independent skills, the collapse check.
	DiversityOff bool `json:"diversity_off"`
	// StaleCheckEvery, when positive, measures every so many iterations
	// what the value learners' block-refreshing weight pass costs
	// (dice.Value.StaleError, an extra whole-set pass per skill): Metrics.StaleError.
	StaleCheckEvery int `json:"stale_check_every,omitempty"`
}

// DefaultConfig is the locomotion setting (l0 6, eps 4) with five value and
// five policy steps per iteration: the paper's Algorithm 1 takes one of
// each, but the SMODICE-expert walks for every seed only with five (issue
// 12's measurements), and every skill of Dual-Force rests on the same
// value and policy learners. Three rehearsal steps on samples of 4,096 rows
// of up to 64 earlier iterations (ours): on the 125,000-transition
// locomotion set (seed 1, 1,000 iterations) 18 of 30 evaluated latents
// passed the 50%-of-SMODICE-expert filter with them, 4 of 30 without, for
// about 4% more time per iteration.
func DefaultConfig() Config {
	return Config{L0: 6, Eps: 4, MuInit: 0, MuLR: 0.1, MinAlpha: 0.05, ValueSteps: 5, PolicySteps: 5,
		RehearsalSteps: 3, RehearsalRows: 4096, RehearsalKeep: 64}
}

// ErrConfig reports an unusable configuration or inputs that do not fit
// together.
var ErrConfig = errors.New("dualforce: bad configuration")

// Inputs are the per-transition quantities of the offline set the loop
// reads: the diversity features phi (rows of PhiDim values, standardised)
// and the imitation reward r_E.
type Inputs struct {
	Phi    []float32
	PhiDim int
	RE     []float32
}

// Latent is one stored z_i^k: the latent skill i was trained under at
// iteration k. Sigma is the sigmoid(mu_i) of its reward R_i^k; Constraint
// and Psi are phi_i and the offline successor features of the weights
// w_i^{k+1} its policy was fitted to in that iteration.
type Latent struct {
	Skill, Iteration  int
	Sigma, Constraint float64
	Psi               []float32
	Z                 []float32
}

// Metrics describe one outer iteration; slices hold one value per skill.
type Metrics struct {
	Iteration int
	// Constraint is phi_i, Sigma sigmoid(mu_i) after the multiplier step.
	Constraint, Sigma []float64
	// Distance is l_i and Nearest j*_i, measured on the weights the
	// iteration started from (those its rewards used).
	Distance []float64
	Nearest  []int
	// Objective and MeanMinDistance are the VdW objective and the mean of
	// l_i, on the same weights.
	Objective, MeanMinDistance float64
	// ESS and MaxW describe the Polyak-averaged weights w_i^{k+1}.
	ESS, MaxW             []float64
	ValueLoss, PolicyLoss []float64
	// StaleError is the total variation distance between each skill's new
	// weights and the exact ones (StaleCheckEvery), NaN when not measured.
	StaleError []float64
}

// staleErrorer is a Value whose weight pass may reuse values of earlier
// passes and can say what that costs (dice.Value).
type staleErrorer interface {
	StaleError() (float64, error)
}

// LogValue lets Metrics be logged as one slog group.
func (m Metrics) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("iteration", m.Iteration),
		slog.Any("phi", m.Constraint), slog.Any("sigma", m.Sigma), slog.Any("l", m.Distance),
		slog.Float64("vdw", m.Objective), slog.Float64("mean_min_distance", m.MeanMinDistance),
		slog.Any("ess", m.ESS), slog.Any("max_w", m.MaxW),
	)
}

// Loop is the Dual-Force outer loop over n skills.
type Loop struct {
	cfg    Config
	in     Inputs
	n      int // transitions
	skills []Skill
	w      []*dice.Polyak
	mu     []float64
	k      int

	// per-skill scratch
	beta, reward [][]float32

	latents []Latent
	// snapshots holds each skill's rehearsal samples, oldest first.
	snapshots [][]Snapshot
}

// Snapshot is a sample of the weights skill Skill's policy was fitted to at
// iteration Iteration, with the latent of that iteration, for rehearsal.
type Snapshot struct {
	Skill, Iteration int
	Rows             []int32
}

// snapshotStride is the spacing of the iterations whose snapshots are
// kept after iteration k: the smallest power of two s with k/s <= keep.
// It only grows, and a multiple of s is a multiple of every smaller power
// of two, so the kept iterations are exactly the multiples of s up to k,
// the same on a resumed run as on a straight one.
func snapshotStride(k, keep int) int {
	s := 1
	for k/s > keep {
		s *= 2
	}
	return s
}

// New checks the inputs and starts every skill's weights at its own random
// point of the simplex (Dirichlet, drawn from rng), every multiplier at
// MuInit.
func New(cfg Config, in Inputs, skills []Skill, rng *rand.Rand) (*Loop, error) {
	if len(skills) < 2 {
		return nil, fmt.Errorf("%w: %d skills, need at least 2", ErrConfig, len(skills))
	}
	if !(cfg.L0 > 0) || !(cfg.MuLR >= 0) || !(cfg.MuKP >= 0) || math.IsInf(cfg.MuKP, 1) || !(cfg.BetaClip >= 0) || math.IsInf(cfg.BetaClip, 1) || !(cfg.MinAlpha > 0 && cfg.MinAlpha <= 1) ||
		cfg.ValueSteps < 0 || cfg.PolicySteps < 0 || cfg.StaleCheckEvery < 0 ||
		cfg.RehearsalSteps < 0 || (cfg.RehearsalSteps > 0 && (cfg.RehearsalRows <= 0 || cfg.RehearsalKeep <= 0)) || cfg.MuInit < -skillset.MuBound || cfg.MuInit > skillset.MuBound {
		return nil, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	n := len(in.RE)
	if n == 0 || in.PhiDim <= 0 || len(in.Phi) != n*in.PhiDim {
		return nil, fmt.Errorf("%w: %d rewards, %d features of width %d", ErrConfig, n, len(in.Phi), in.PhiDim)
	}
	if err := dataset.CheckFinite("diversity features", in.Phi, in.PhiDim); err != nil {
		return nil, err
	}
	if err := dataset.CheckFinite("imitation reward", in.RE, 1); err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, in: in, n: n, skills: skills, mu: make([]float64, len(skills)), snapshots: make([][]Snapshot, len(skills))}
	for i := range skills {
		l.w = append(l.w, &dice.Polyak{MinAlpha: cfg.MinAlpha, W: Dirichlet(rng, n)})
		l.mu[i] = cfg.MuInit
		l.beta = append(l.beta, make([]float32, n))
		l.reward = append(l.reward, make([]float32, n))
	}
	return l, nil
}

// sigma is skill i's imitation share sigmoid(mu_i), with MuKP sigmoid(mu_i + MuKP (phi_i -
// Eps)) on the latest constraint estimate (none before the first iteration), clamped like mu;
// 1 with diversity off.
func (l *Loop) sigma(i int) float64 {
	if l.cfg.DiversityOff {
		return 1
	}
	mu := l.mu[i]
	if ns := len(l.skills); l.cfg.MuKP > 0 && len(l.latents) >= ns {
		phi := l.latents[len(l.latents)-ns+i].Constraint
		mu = min(max(mu+l.cfg.MuKP*(phi-l.cfg.Eps), -skillset.MuBound), skillset.MuBound)
	}
	return skillset.Sigmoid(mu)
}

// Weights returns skill i's current (Polyak-averaged) weights over the
// offline set; the slice is the loop's.
func (l *Loop) Weights(i int) []float64 { return l.w[i].W }

// Latents returns every latent stored so far, in order of iteration and
// skill; the slice is the loop's.
func (l *Loop) Latents() []Latent { return l.latents }

// Iterate runs one outer iteration of Algorithm 1: the VdW rewards from the
// current weights, each skill's latent, value steps, weights, Polyak
// average and policy steps (skills side by side), the constraint estimates
// and the multiplier step.
func (l *Loop) Iterate() (Metrics, error) {
	l.k++
	ns := len(l.skills)
	m := Metrics{
		Iteration:  l.k,
		Constraint: make([]float64, ns), Sigma: make([]float64, ns),
		ESS: make([]float64, ns), MaxW: make([]float64, ns),
		ValueLoss: make([]float64, ns), PolicyLoss: make([]float64, ns), StaleError: make([]float64, ns),
	}

	// Van der Waals force, on the weights w^k.
	psi := make([][]float64, ns)
	for i := range ns {
		psi[i] = toFloat64(dice.SuccessorFeatures(l.w[i].W, l.in.Phi, l.in.PhiDim))
	}
	nb, err := skillset.Nearest(psi)
	if err != nil {
		return m, err
	}
	m.Distance, m.Nearest = nb.Distance, nb.Nearest
	m.Objective, m.MeanMinDistance = Objective(nb.Distance, l.cfg.L0), skillset.MeanMinDistance(nb.Distance)
	force := Force(psi, nb, l.cfg.L0)
	sigmas := make([]float64, ns)
	for i := range ns {
		sigmas[i] = l.sigma(i)
		Reward(l.in.Phi, force[i], l.beta[i])
		if k := l.cfg.BetaClip; k > 0 {
			ClipTails(l.beta[i], k)
		}
		Mix(l.beta[i], l.in.RE, sigmas[i], l.reward[i])
	}

	// Latents, values, weights and policies, every skill on its own
	// goroutine.
	latents := make([]Latent, ns)
	errs := make([]error, ns)
	var wg sync.WaitGroup
	for i := range ns {
		wg.Go(func() {
			latents[i], errs[i] = l.train(i, &m)
			latents[i].Sigma = sigmas[i]
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return m, fmt.Errorf("dualforce: iteration %d: %w", l.k, err)
	}
	l.latents = append(l.latents, latents...)

	// Bounded Lagrange multipliers.
	if !l.cfg.DiversityOff {
		skillset.MultiplierStep(l.mu, m.Constraint, l.cfg.Eps, l.cfg.MuLR)
	}
	for i := range ns {
		m.Sigma[i] = l.sigma(i)
	}
	return m, nil
}

// train runs skill i's part of an iteration with the reward l.reward[i] and
// fills its entries of m (each goroutine writes only index i).
func (l *Loop) train(i int, m *Metrics) (Latent, error) {
	s := l.skills[i]
	z, err := s.Encoder.Encode(l.reward[i])
	if err != nil {
		return Latent{}, fmt.Errorf("skill %d: encoding its reward: %w", i, err)
	}
	if err := s.Value.SetReward(l.reward[i]); err != nil {
		return Latent{}, fmt.Errorf("skill %d: %w", i, err)
	}
	if err := s.Value.SetLatent(z); err != nil {
		return Latent{}, fmt.Errorf("skill %d: %w", i, err)
	}
	for range l.cfg.ValueSteps {
		if m.ValueLoss[i], err = s.Value.Step(); err != nil {
			return Latent{}, fmt.Errorf("skill %d: %w", i, err)
		}
	}
	wNew, err := s.Value.Weights()
	if err != nil {
		return Latent{}, fmt.Errorf("skill %d: %w", i, err)
	}
	m.StaleError[i] = math.NaN()
	if se, ok := s.Value.(staleErrorer); ok && l.cfg.StaleCheckEvery > 0 && l.k%l.cfg.StaleCheckEvery == 0 {
		if m.StaleError[i], err = se.StaleError(); err != nil {
			return Latent{}, fmt.Errorf("skill %d: %w", i, err)
		}
	}
	w := l.w[i].Add(wNew)
	if err := s.Policy.SetLatent(z); err != nil {
		return Latent{}, fmt.Errorf("skill %d: %w", i, err)
	}
	if err := s.Policy.SetWeights(w); err != nil {
		return Latent{}, fmt.Errorf("skill %d: %w", i, err)
	}
	for range l.cfg.PolicySteps {
		m.PolicyLoss[i] = s.Policy.Step()
	}
	if err := l.rehearse(i); err != nil {
		return Latent{}, fmt.Errorf("skill %d: rehearsal: %w", i, err)
	}
	stats := dice.Summarise(w)
	m.ESS[i], m.MaxW[i] = stats.ESS, stats.Max
	m.Constraint[i] = dice.Constraint(w, l.in.RE)
	psi := dice.SuccessorFeatures(w, l.in.Phi, l.in.PhiDim)
	return Latent{Skill: i, Iteration: l.k, Constraint: m.Constraint[i], Psi: psi, Z: z}, nil
}

// rehearse takes skill i's rehearsal steps on its snapshots, in turn,
// and then updates them: it keeps the multiples of the new stride and adds
// this iteration's weights when k is one. It runs on skill i's goroutine and
// reads l.latents, which grow only between iterations.
func (l *Loop) rehearse(i int) error {
	if l.cfg.RehearsalSteps == 0 {
		return nil
	}
	s, snaps, ns := l.skills[i], l.snapshots[i], len(l.skills)
	for r := range l.cfg.RehearsalSteps {
		if len(snaps) == 0 {
			break
		}
		snap := snaps[((l.k-1)*l.cfg.RehearsalSteps+r)%len(snaps)]
		if err := s.Policy.SetLatent(l.latents[(snap.Iteration-1)*ns+i].Z); err != nil {
			return err
		}
		if err := s.Policy.SetRows(snap.Rows); err != nil {
			return err
		}
		s.Policy.Step()
	}
	stride := snapshotStride(l.k, l.cfg.RehearsalKeep)
	kept := snaps[:0]
	for _, snap := range snaps {
		if snap.Iteration%stride == 0 {
			kept = append(kept, snap)
		}
	}
	if l.k%stride == 0 {
		kept = append(kept, Snapshot{Skill: i, Iteration: l.k, Rows: s.Policy.Resample(l.cfg.RehearsalRows)})
	}
	l.snapshots[i] = kept
	return nil
}

func toFloat64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
