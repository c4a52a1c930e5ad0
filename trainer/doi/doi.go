package doi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/export"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/smodice"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// Algorithm names DOI runs in checkpoints.
const Algorithm = "doi"

// Config sets up a run. DefaultConfig gives the project's values.
type Config struct {
	Seed uint64 `json:"seed"`
	// Skills is n, the number of one-hot skill codes.
	Skills    int         `json:"skills"`
	Disc      disc.Config `json:"disc"`
	DiscSteps int         `json:"disc_steps"`
	HoldOut   float64     `json:"hold_out"`
	// Value and Policy are every skill's learners (unconditioned: the skill is the slot).
	Value  dice.ValueConfig `json:"value"`
	Policy wbc.Config       `json:"policy"`
	// ValueSteps and PolicySteps are gradient steps per skill and iteration.
	ValueSteps  int `json:"value_steps"`
	PolicySteps int `json:"policy_steps"`
	// Classifier is q(z | phi(s)): hidden widths, Adam rate, samples per skill and step, steps
	// per iteration.
	ClassifierHidden []int   `json:"classifier_hidden"`
	ClassifierLR     float64 `json:"classifier_lr"`
	ClassifierBatch  int     `json:"classifier_batch"`
	ClassifierSteps  int     `json:"classifier_steps"`
	// Epsilon is the constraint's bound on phi_z; MuLR the multipliers' step (Dual-Force's
	// bounded step, skillset.MultiplierStep).
	Epsilon float64 `json:"epsilon"`
	MuLR    float64 `json:"mu_lr"`
	// MinAlpha floors the Polyak step of the weights (alpha_k = max(1/k, MinAlpha)).
	MinAlpha float64 `json:"min_alpha"`
	// DISDAIN weighs the ensemble-disagreement bonus (0: plain DOI); Ensemble is the number of
	// classifiers whose mean is q (1 without DISDAIN).
	DISDAIN  float64 `json:"disdain"`
	Ensemble int     `json:"ensemble"`
	// FixedMu, when set, pins every sigmoid(mu) at 1: SMODICE-dagger, the collapse check.
	FixedMu bool         `json:"fixed_mu,omitempty"`
	Run     run.Settings `json:"-"`
}

// DefaultConfig is n = 3 with the spec's discriminator and the SMODICE-expert's learners and
// schedule (batch 1024, five value and five policy steps per skill and iteration, 2000
// iterations checkpointed every 100: what Dual-Force runs, so the two compare on equal
// terms), a 256-256 classifier (Adam 3e-4, 256 samples per skill, one step per iteration),
// the locomotion constraint eps = 4, multipliers stepped at 0.05 within +-skillset.MuBound,
// Polyak floor 0.05, DISDAIN off.
func DefaultConfig() Config {
	value, policy := dice.DefaultValueConfig(), wbc.DefaultConfig()
	value.Batch, value.InitBatch, policy.Batch = 1024, 1024, 1024
	return Config{
		Seed: 1, Skills: 3, Disc: disc.DefaultConfig(), DiscSteps: 20000, HoldOut: 0.1,
		Value: value, Policy: policy, ValueSteps: 5, PolicySteps: 5,
		ClassifierHidden: []int{256, 256}, ClassifierLR: 3e-4, ClassifierBatch: 256, ClassifierSteps: 1,
		Epsilon: 4, MuLR: 0.05, MinAlpha: 0.05, Ensemble: 1,
		Run: run.Settings{Iterations: 2000, CheckpointEvery: 100},
	}
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("doi: bad configuration")

func (c Config) validate() error {
	switch {
	case c.Skills < 2:
		return fmt.Errorf("%w: %d skills (a discriminator needs two)", ErrConfig, c.Skills)
	case c.DiscSteps < 0 || !(c.HoldOut >= 0 && c.HoldOut < 1) || c.ValueSteps < 0 || c.PolicySteps < 0 || c.ClassifierSteps < 0:
		return fmt.Errorf("%w: disc steps %d, hold-out %v, value steps %d, policy steps %d, classifier steps %d",
			ErrConfig, c.DiscSteps, c.HoldOut, c.ValueSteps, c.PolicySteps, c.ClassifierSteps)
	case c.Value.Latent != 0 || c.Policy.Latent != 0:
		return fmt.Errorf("%w: DOI's skills are slots, its learners take no latent", ErrConfig)
	case c.ClassifierBatch < 1 || !(c.ClassifierLR > 0) || c.Ensemble < 1:
		return fmt.Errorf("%w: classifier batch %d, rate %v, ensemble %d", ErrConfig, c.ClassifierBatch, c.ClassifierLR, c.Ensemble)
	// Written as ranges that NaN and infinities fall outside of.
	case !(math.Abs(c.Epsilon) <= math.MaxFloat64) || !(c.MuLR >= 0 && c.MuLR <= math.MaxFloat64) ||
		!(c.DISDAIN >= 0 && c.DISDAIN <= math.MaxFloat64):
		return fmt.Errorf("%w: eps %v, mu rate %v, DISDAIN %v", ErrConfig, c.Epsilon, c.MuLR, c.DISDAIN)
	case c.DISDAIN > 0 && c.Ensemble < 2:
		return fmt.Errorf("%w: DISDAIN needs an ensemble of at least 2 classifiers, not %d", ErrConfig, c.Ensemble)
	case !(c.MinAlpha > 0 && c.MinAlpha <= 1):
		return fmt.Errorf("%w: Polyak floor %v", ErrConfig, c.MinAlpha)
	}
	if err := c.Run.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// skill is one skill's learners and weights.
type skill struct {
	v      *dice.Value
	pi     *wbc.Learner
	polyak dice.Polyak
	reward []float32
	cdf    []float64 // cumulative Polyak weights, for the classifier's draws
	src    *rand.PCG // the learners' generator's source, saved with the checkpoint

	valueLoss, policyLoss float64
	phi                   float64
	psi                   []float32
	stats                 dice.WeightStats
}

// Imitation is what DOI imitates: the imitation reward r_E of every offline transition and,
// optionally, the SMODICE-expert's occupancy ratios eta_E (whole-set weights, summing to 1).
// With ratios, a skill's constraint is the spec's KL(d_z || d_E) = sum w_z log(w_z / eta_E);
// without, Dual-Force's phi_z = dice.Constraint(w_z, r_E).
type Imitation struct {
	Reward []float32
	Ratios []float64
}

// Loop is DOI's iteration on prepared data and a fixed imitation reward r_E.
type Loop struct {
	cfg       Config
	d         *prep.Data
	rE        []float32
	ratios    []float64
	skills    []*skill
	ensemble  []*classifier
	src       *rand.PCG  // the source of rng, saved with the checkpoint
	rng       *rand.Rand // the classifiers' initialisation and draws
	mu        []float64
	iteration int

	probs  []float64 // ensemble-mean q over the whole set, N x n
	member []float64 // one member's q over a chunk
	bonus  []float64 // DISDAIN bonus per state
	x      []float32 // the classifier's batch
	labels []int
}

// NewLoop builds n fresh skills (independent networks, each its own generator) and the
// classifier ensemble on d, imitating im (one value per offline transition).
func NewLoop(d *prep.Data, im Imitation, cfg Config) (*Loop, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := d.Offline.Len()
	if len(im.Reward) != n {
		return nil, fmt.Errorf("%w: %d imitation rewards for %d transitions", dice.ErrRewardLength, len(im.Reward), n)
	}
	if err := dataset.CheckFinite("r_E", im.Reward, 1); err != nil {
		return nil, err
	}
	if im.Ratios != nil {
		if len(im.Ratios) != n {
			return nil, fmt.Errorf("%w: %d expert ratios for %d transitions", ErrImitation, len(im.Ratios), n)
		}
		if err := dice.CheckWeights(im.Ratios); err != nil {
			return nil, fmt.Errorf("%w: expert ratios: %w", ErrImitation, err)
		}
	}
	rE := im.Reward
	src := rand.NewPCG(cfg.Seed, 0xd0c1a55)
	l := &Loop{
		cfg: cfg, d: d, rE: rE, ratios: im.Ratios, src: src, rng: rand.New(src), mu: make([]float64, cfg.Skills),
		probs: make([]float64, n*cfg.Skills), bonus: make([]float64, n),
		x: make([]float32, cfg.Skills*cfg.ClassifierBatch*d.FeatureDim), labels: make([]int, cfg.Skills*cfg.ClassifierBatch),
	}
	for z := range cfg.Skills {
		src := rand.NewPCG(cfg.Seed, uint64(z)+1)
		rng := rand.New(src)
		v, err := dice.NewValue(d.Offline, cfg.Value, rng)
		if err != nil {
			return nil, err
		}
		pi, err := wbc.New(d.Offline, cfg.Policy, rng)
		if err != nil {
			return nil, err
		}
		if err := pi.SetTiltReward(rE); err != nil {
			return nil, err
		}
		l.skills = append(l.skills, &skill{v: v, pi: pi, polyak: dice.Polyak{MinAlpha: cfg.MinAlpha}, reward: make([]float32, n), cdf: make([]float64, n), src: src})
	}
	for range cfg.Ensemble {
		c, err := newClassifier(l.rng, d.FeatureDim, cfg.Skills, cfg.ClassifierHidden, cfg.ClassifierLR)
		if err != nil {
			return nil, fmt.Errorf("doi: classifier: %w", err)
		}
		l.ensemble = append(l.ensemble, c)
	}
	return l, nil
}

// sigma is sigmoid(mu_z), 1 for SMODICE-dagger.
func (l *Loop) sigma(z int) float64 {
	if l.cfg.FixedMu {
		return 1
	}
	return skillset.Sigmoid(l.mu[z])
}

// classifyAll computes the ensemble-mean q(.|phi(s)) of every offline state and, with an
// ensemble, the DISDAIN bonus H(mean q) - mean H(q). It returns the mean entropy of q.
func (l *Loop) classifyAll() float64 {
	n, k, f := l.d.Offline.Len(), l.cfg.Skills, l.d.FeatureDim
	const chunk = 4096
	if l.member == nil {
		l.member = make([]float64, chunk*k)
	}
	clear(l.probs)
	clear(l.bonus)
	members := float64(len(l.ensemble))
	for start := 0; start < n; start += chunk {
		rows := min(chunk, n-start)
		for _, c := range l.ensemble {
			c.probs(l.d.Phi[start*f:(start+rows)*f], rows, l.member)
			for r := range rows {
				p := l.member[r*k : (r+1)*k]
				for z, x := range p {
					l.probs[(start+r)*k+z] += x / members
				}
				l.bonus[start+r] -= entropy(p) / members
			}
		}
	}
	meanH := 0.0
	for i := range n {
		h := entropy(l.probs[i*k : (i+1)*k])
		meanH += h / float64(n)
		l.bonus[i] += h
	}
	return meanH
}

// Iterate runs one DOI iteration and returns its metrics record.
func (l *Loop) Iterate(ctx context.Context) (map[string]metrics.Num, error) {
	start := time.Now()
	l.iteration++
	k := l.cfg.Skills
	rec := map[string]metrics.Num{metrics.IterationKey: metrics.Num(l.iteration)}
	rec["q_entropy"] = metrics.Num(l.classifyAll())
	meanBonus := 0.0
	for _, b := range l.bonus {
		meanBonus += b / float64(len(l.bonus))
	}
	rec["disdain_bonus"] = metrics.Num(meanBonus)
	for z, s := range l.skills {
		sig := l.sigma(z)
		for i := range s.reward {
			div := math.Log(float64(k)*max(l.probs[i*k+z], probFloor))/float64(k) + l.cfg.DISDAIN*l.bonus[i]
			s.reward[i] = float32((1-sig)*div + sig*float64(l.rE[i]))
		}
	}
	errs := make([]error, k)
	var wg sync.WaitGroup
	for z, s := range l.skills {
		wg.Go(func() { errs[z] = l.train(ctx, s) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rec, fmt.Errorf("doi: iteration %d: %w", l.iteration, err)
	}
	rec["classifier_loss"] = metrics.Num(l.trainClassifiers())
	psis := make([][]float64, k)
	phis := make([]float64, k)
	for z, s := range l.skills {
		key := func(name string) string { return skillset.SkillKey(name, z) }
		rec[key("value_loss")], rec[key("policy_loss")] = metrics.Num(s.valueLoss), metrics.Num(s.policyLoss)
		rec[key("phi")], rec[key("sigma")] = metrics.Num(s.phi), metrics.Num(l.sigma(z))
		rec[key("ess")] = metrics.Num(s.stats.ESS)
		if l.d.IsExpert != nil {
			m, _ := dice.ExpertMass(s.polyak.W, l.d.IsExpert)
			rec[key("expert_mass")] = metrics.Num(m)
		}
		psis[z] = make([]float64, len(s.psi))
		for i, v := range s.psi {
			psis[z][i] = float64(v)
		}
		phis[z] = s.phi
	}
	if !l.cfg.FixedMu {
		skillset.MultiplierStep(l.mu, phis, l.cfg.Epsilon, l.cfg.MuLR)
	}
	nb, err := skillset.Nearest(psis)
	if err != nil {
		return rec, err
	}
	rec["mean_min_distance"] = metrics.Num(skillset.MeanMinDistance(nb.Distance))
	rec["seconds"] = metrics.Num(time.Since(start).Seconds())
	return rec, nil
}

// train runs one skill's value steps, weight pass, Polyak average and policy steps.
func (l *Loop) train(ctx context.Context, s *skill) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.v.SetReward(s.reward); err != nil {
		return err
	}
	for range l.cfg.ValueSteps {
		loss, err := s.v.Step()
		if err != nil {
			return err
		}
		s.valueLoss = loss
	}
	w, err := s.v.Weights()
	if err != nil {
		return err
	}
	if err := dice.CheckWeights(w); err != nil {
		return err
	}
	avg := s.polyak.Add(w)
	if err := s.pi.SetWeights(avg); err != nil {
		return err
	}
	for range l.cfg.PolicySteps {
		s.policyLoss = s.pi.Step()
	}
	l.settle(s)
	return nil
}

// settle computes what follows from a skill's averaged weights: their statistics, the
// constraint, the offline successor features and the cumulative weights the classifier draws
// by.
func (l *Loop) settle(s *skill) {
	avg := s.polyak.W
	s.stats = dice.Summarise(avg)
	if l.ratios != nil {
		s.phi = klTo(avg, l.ratios)
	} else {
		s.phi = dice.Constraint(avg, l.rE)
	}
	s.psi = dice.SuccessorFeatures(avg, l.d.Phi, l.d.FeatureDim)
	sum := 0.0
	for i, x := range avg {
		sum += x
		s.cdf[i] = sum
	}
}

// trainClassifiers fits every ensemble member to states drawn by each skill's weights, each
// labelled with its skill (p(z) uniform: ClassifierBatch states per skill); members draw
// their own batches. It returns the members' mean loss of the last step.
func (l *Loop) trainClassifiers() float64 {
	f, b := l.d.FeatureDim, l.cfg.ClassifierBatch
	loss := math.NaN()
	for range l.cfg.ClassifierSteps {
		loss = 0
		for _, c := range l.ensemble {
			for z, s := range l.skills {
				for j := range b {
					row := z*b + j
					i := draw(s.cdf, l.rng)
					copy(l.x[row*f:(row+1)*f], l.d.Phi[i*f:(i+1)*f])
					l.labels[row] = z
				}
			}
			loss += c.step(l.x, l.labels) / float64(len(l.ensemble))
		}
	}
	return loss
}

// klTo is KL(w || ref) = sum w log(w / ref) over the offline set, both floored at
// dice.WeightFloor inside the logarithm.
func klTo(w, ref []float64) float64 {
	kl := 0.0
	for i, x := range w {
		if x > 0 {
			kl += x * (math.Log(max(x, dice.WeightFloor)) - math.Log(max(ref[i], dice.WeightFloor)))
		}
	}
	return kl
}

// ErrImitation reports an imitation target that does not fit the data.
var ErrImitation = errors.New("doi: imitation target does not fit the data")

// draw returns an index with probability proportional to its weight, given the cumulative
// weights cdf.
func draw(cdf []float64, rng *rand.Rand) int {
	u := cdf[len(cdf)-1] * (1 - rng.Float64())
	i, _ := slices.BinarySearch(cdf, u)
	return min(i, len(cdf)-1)
}

// Describe is the progress bar's text after a record.
func (l *Loop) Describe(r map[string]metrics.Num) string {
	return fmt.Sprintf("DOI H(q) %.3f min dist %.3f", r["q_entropy"], r["mean_min_distance"])
}

// Bank exports the skills: n slots, one latent per skill with its iteration, sigmoid(mu),
// constraint and offline successor features.
func (l *Loop) Bank() (*skills.Bank, error) {
	slots := make([]*nn.Conditioned[float32], len(l.skills))
	latents := make([]export.Latent, len(l.skills))
	for z, s := range l.skills {
		var err error
		if slots[z], err = s.pi.Deployed(); err != nil {
			return nil, err
		}
		latents[z] = export.Latent{Slot: z, Z: []float32{0}, Info: skills.LatentInfo{
			Iteration: l.iteration, Name: fmt.Sprintf("doi-skill%d", z), SigmoidMu: l.sigma(z), Phi: s.phi, OfflinePsi: s.psi,
		}}
	}
	return export.Bank(l.d.Contract, "dualforce train doi", slots, latents)
}

// Multipliers returns sigmoid(mu_z) of every skill.
func (l *Loop) Multipliers() []float64 {
	out := make([]float64, len(l.mu))
	for z := range out {
		out[z] = l.sigma(z)
	}
	return out
}

// Plot draws nothing of its own: dualforce report plots every column of the metrics log.
func (l *Loop) Plot(string) error { return nil }

// Options are how a run reports and where it writes, and what it imitates.
type Options struct {
	run.Options
	// Expert, when set, is a SMODICE-expert run on the same data: its r_E replaces a
	// discriminator trained here, and its occupancy ratios give the constraint KL(d_z || d_E).
	Expert *smodice.Checkpoint
	// Observe, when set, sees every metrics record right after it is logged.
	Observe func(map[string]metrics.Num)
}

// ExpertImitation is the imitation target of a SMODICE-expert run on d: its r_E (checked to
// be of d's offline set by disc.CheckReward) and the whole-set weights of its value function
// (its occupancy ratios eta_E). The run must have trained on d's very data, the expert set
// included (the same digest): its value function, not only r_E, is read.
func ExpertImitation(d *prep.Data, ck *smodice.Checkpoint) (Imitation, error) {
	rE := ck.Reward
	if err := disc.CheckReward("the SMODICE run", ck.Task, ck.Contract, rE, d); err != nil {
		return Imitation{}, fmt.Errorf("%w: %w", ErrImitation, err)
	}
	if ck.Digest != d.Digest {
		return Imitation{}, fmt.Errorf("%w: the SMODICE run trained on other data (offline or expert set)", ErrImitation)
	}
	v, err := dice.NewValue(d.Offline, ck.Config.Value, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return Imitation{}, err
	}
	if err := v.Restore(ck.V); err != nil {
		return Imitation{}, fmt.Errorf("%w: %w", ErrImitation, err)
	}
	if err := v.SetReward(rE); err != nil {
		return Imitation{}, fmt.Errorf("%w: %w", ErrImitation, err)
	}
	w, err := v.Weights()
	if err != nil {
		return Imitation{}, err
	}
	return Imitation{Reward: rE, Ratios: slices.Clone(w)}, nil
}

// Train runs DOI on d for cfg.Run.Iterations in the run directory opt.Dir, imitating
// opt.Expert's SMODICE-expert run or, without one, an imitation reward r_E it trains first
// (the discriminator, as SMODICE-expert does). With opt.Resume and a checkpoint in opt.Dir it
// continues that run instead, bit for bit as if uninterrupted: it imitates what the
// checkpoint holds (no discriminator is trained again; opt.Expert, when given, must be the
// run's). It returns the loop, whose Bank is the result; on cancellation the loop so far and
// ctx's error.
func Train(ctx context.Context, d *prep.Data, cfg Config, opt Options) (*Loop, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Expert == nil {
		return nil, fmt.Errorf("doi: train needs expert states: %w", dataset.ErrEmptyExpert)
	}
	cfg.Disc.Seed = cfg.Seed
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("doi: %w", err)
	}
	file, err := run.Open(opt.Options, run.Identity{Algorithm: Algorithm, Task: d.Task, Digest: d.Digest, Config: cfgJSON}, cfg.Run)
	if err != nil {
		return nil, err
	}
	var im Imitation
	switch {
	case file != nil:
		if im, err = resumedImitation(d, file, opt.Expert); err != nil {
			return nil, err
		}
		opt.Log().Info("imitating the checkpoint's target", "expert_ratios", im.Ratios != nil)
	case opt.Expert != nil:
		if im, err = ExpertImitation(d, opt.Expert); err != nil {
			return nil, err
		}
		opt.Log().Info("imitating the SMODICE-expert run", "iteration", opt.Expert.Iteration, "expert_ess", dice.Summarise(im.Ratios).ESS)
	default:
		opt.Log().Info("training the discriminator", "steps", cfg.DiscSteps)
		r, err := disc.TrainReward(ctx, d.Expert, d.Offline.Obs, d.Offline.ObsDim, cfg.Disc,
			disc.RewardOptions{Steps: cfg.DiscSteps, HoldOut: cfg.HoldOut, Progress: opt.Progress, Quiet: opt.Quiet})
		if err != nil {
			return nil, err
		}
		opt.Log().Info("discriminator", "held_out_accuracy", r.Report.HeldOutAccuracy)
		im.Reward = r.R
	}
	l, err := NewLoop(d, im, cfg)
	if err != nil {
		return nil, err
	}
	done := 0
	if file != nil {
		if err := l.restore(file); err != nil {
			return nil, fmt.Errorf("%w: %w", checkpoint.ErrCheckpoint, err)
		}
		done = file.Iteration
	}
	err = run.Drive(ctx, run.Loop[map[string]metrics.Num](l), "DOI", cfg.Run, done, file == nil, opt.Options, opt.Observe)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return l, err
		}
		return nil, err
	}
	return l, nil
}
