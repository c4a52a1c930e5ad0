package dualforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// Algorithm names Dual-Force runs in checkpoints.
const Algorithm = "dualforce"

// Producer is recorded in banks exported by this package.
const Producer = "dualforce train dualforce"

// TrainConfig sets up a run. DefaultTrainConfig gives the project's values
// for a task.
type TrainConfig struct {
	// Seed derives every other seed: the Dirichlet start's and each
	// skill's generator (its value and policy learners' and its subset
	// draws).
	Seed   uint64           `json:"seed"`
	Skills int              `json:"skills"`
	Loop   Config           `json:"loop"`
	Value  dice.ValueConfig `json:"value"`
	Policy wbc.Config       `json:"policy"`
	// Run is how many outer iterations to run and how often to checkpoint.
	Run run.Settings `json:"-"`
}

// DefaultTrainConfig is n = 3 skills with the task's l0 and eps (the
// paper's: prep.Tasks) and otherwise the SMODICE-expert's schedule: V (256-256
// ReLU, Adam 3e-4) and pi (wbc.DefaultConfig) with batch 1024, five value and five policy
// steps per outer iteration, 2000 iterations checkpointed every 100. On sets
// larger than DefaultRefreshRows each iteration's weight pass re-evaluates
// V on one block of that many rows (dice.ValueConfig.RefreshRows), and its
// error is measured every 100 iterations. Falls are absorbing, as the
// SMODICE-expert's. The latent width is the FRE encoder's and is set by
// Train.
func DefaultTrainConfig(task string) (TrainConfig, error) {
	td, err := prep.LookupTask(task)
	if err != nil {
		return TrainConfig{}, err
	}
	loop := DefaultConfig()
	loop.L0, loop.Eps = td.L0, td.Eps
	value, policy := dice.DefaultValueConfig(), wbc.DefaultConfig()
	value.Batch, value.InitBatch, policy.Batch = 1024, 1024, 1024
	value.RefreshRows, loop.StaleCheckEvery = DefaultRefreshRows, 100
	// As the SMODICE-expert's: with the spec's terminal value of 0 its
	// weights collapsed onto falls on the paper-scale set (dice.ValueConfig).
	value.AbsorbingFalls = true
	return TrainConfig{
		Seed: 1, Skills: 3, Loop: loop, Value: value, Policy: policy,
		Run: run.Settings{Iterations: 2000, CheckpointEvery: 100},
	}, nil
}

// DefaultRefreshRows is the rows of the offline set whose V a weight pass
// re-evaluates per iteration: the test-scale and small sets (10,000 and
// 43,000 transitions) stay exact; on the paper-scale locomotion set
// (1,244,751) the exact pass was 86% of an iteration, 7 hours for 2000
// iterations on two cores, and each value is now at most ten iterations old.
const DefaultRefreshRows = 1 << 17

// skillSeed seeds skill i's generator.
func (c TrainConfig) skillSeed(i int) *rand.PCG { return rand.NewPCG(c.Seed^0xd0a1_f0ce, uint64(i)) }

// NewEncoder builds skill i's encoder over the offline set: it draws its
// subsets with rng (the skill's generator, saved with the checkpoint).
type NewEncoder func(skill int, rng *rand.Rand) (Encoder, error)

// ErrOtherData reports a pre-trained FRE encoder made for other data than
// the run's (the discriminator's reward is checked by disc.ReadReward).
var ErrOtherData = errors.New("dualforce: input was made from other data")

// TrainInputs are what a run needs besides the prepared data.
type TrainInputs struct {
	// RE is the imitation reward r_E of every offline transition (the
	// discriminator's, disc.ReadReward).
	RE []float32
	// LatentDim is the encoder's latent width.
	LatentDim int
	Encoder   NewEncoder
	// BankFRE, when set, is the frozen encoder with its anchor states that
	// the bank carries, so the robot can encode a new reward zero-shot.
	BankFRE *skills.FRE
}

// Options are how a run reports and where it writes.
type Options struct {
	run.Options
	// Observe, when set, sees every metrics record right after it is logged.
	Observe func(Record)
}

// Record is one line of metrics.jsonl (Metrics.Record plus the wall time).
type Record = map[string]metrics.Num

// KeySeconds is the wall time of an iteration in a Record.
const KeySeconds = "seconds"

// trainer is the run harness's view of a Dual-Force run.
type trainer struct {
	d        *prep.Data
	cfg      TrainConfig
	rE       []float32
	loop     *Loop
	srcs     []*rand.PCG
	values   []*dice.Value
	policies []*wbc.Learner
	bankFRE  *skills.FRE
}

// newTrainer checks the inputs, completes cfg from them (the trainer's cfg is what a run keeps
// and compares on resume) and builds every skill's fresh learners and encoder (each skill's own
// generator), with r_E as the policy draws' tilt, and the loop over them.
func newTrainer(d *prep.Data, in TrainInputs, cfg TrainConfig) (*trainer, error) {
	if cfg.Skills < 2 {
		return nil, fmt.Errorf("%w: %d skills, need at least 2", ErrConfig, cfg.Skills)
	}
	if len(in.RE) != d.Offline.Len() {
		return nil, fmt.Errorf("%w: %d imitation rewards for %d transitions", ErrConfig, len(in.RE), d.Offline.Len())
	}
	cfg.Value.Latent, cfg.Policy.Latent = in.LatentDim, in.LatentDim
	if cfg.Loop.RehearsalSteps == 0 {
		// The sizes mean nothing then; dropped, the configuration is that of
		// runs from before rehearsal, which therefore still resume.
		cfg.Loop.RehearsalRows, cfg.Loop.RehearsalKeep = 0, 0
	}
	t := &trainer{d: d, cfg: cfg, rE: in.RE, bankFRE: in.BankFRE}
	var sk []Skill
	for i := range cfg.Skills {
		src := cfg.skillSeed(i)
		rng := rand.New(src)
		v, err := dice.NewValue(d.Offline, cfg.Value, rng)
		if err != nil {
			return nil, err
		}
		pi, err := wbc.New(d.Offline, cfg.Policy, rng)
		if err != nil {
			return nil, err
		}
		if err := pi.SetTiltReward(in.RE); err != nil {
			return nil, err
		}
		enc, err := in.Encoder(i, rng)
		if err != nil {
			return nil, err
		}
		t.srcs, t.values, t.policies = append(t.srcs, src), append(t.values, v), append(t.policies, pi)
		sk = append(sk, Skill{Value: v, Policy: pi, Encoder: enc})
	}
	inputs := Inputs{Phi: d.Phi, PhiDim: d.FeatureDim, RE: in.RE}
	var err error
	if t.loop, err = New(cfg.Loop, inputs, sk, rand.New(rand.NewPCG(cfg.Seed, 0xd1))); err != nil {
		return nil, err
	}
	return t, nil
}

// Train runs (or resumes) Dual-Force on d in opt.Dir and returns the bank
// of every latent met: one slot per skill (its last policy) and every
// z_i^k with its skill, iteration, sigmoid(mu), phi and offline psi. With
// opt.Judge (Judge, which judges the skills as parts) each skill is taken
// from the checkpoint it was judged best in: its policy of that iteration
// and its latents met up to it.
func Train(ctx context.Context, d *prep.Data, in TrainInputs, cfg TrainConfig, opt Options) (*skills.Bank, error) {
	// Everything is built, and every input checked, before the run
	// directory is touched.
	t, err := newTrainer(d, in, cfg)
	if err != nil {
		return nil, err
	}
	cfg = t.cfg
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("dualforce: %w", err)
	}
	file, err := run.Open(opt.Options, run.Identity{Algorithm: Algorithm, Task: d.Task, Digest: d.Digest, Config: cfgJSON}, cfg.Run)
	if err != nil {
		return nil, err
	}
	done := 0
	if file != nil {
		// The digest covers the raw data, not which fields phi reads.
		if saved := file.Contract.Features.Fields; !slices.Equal(saved, d.Contract.Features.Fields) {
			return nil, fmt.Errorf("%w: its phi projects onto %q, not %q", run.ErrResumeMismatch, saved, d.Contract.Features.Fields)
		}
		if err := t.restore(file); err != nil {
			return nil, fmt.Errorf("%w: %w", checkpoint.ErrCheckpoint, err)
		}
		done = file.Iteration
	}
	err = run.Drive(ctx, run.Loop[Record](t), "Dual-Force", cfg.Run, done, file == nil, opt.Options, opt.Observe)
	if err != nil {
		return nil, err
	}
	if opt.Judge != nil {
		return t.selectedBank(opt.Dir)
	}
	return t.bank()
}

func (t *trainer) Iterate(context.Context) (Record, error) {
	start := time.Now()
	m, err := t.loop.Iterate()
	if err != nil {
		return nil, err
	}
	rec := m.Record()
	if b := t.d.Behaviours; b != nil {
		for i := range t.cfg.Skills {
			for k, mass := range b.Mass(t.loop.Weights(i)) {
				rec[BehaviourMassKey(b.Names[k], i)] = metrics.Num(mass)
			}
		}
	}
	rec[KeySeconds] = metrics.Num(time.Since(start).Seconds())
	return rec, nil
}

func (t *trainer) Describe(r Record) string {
	return fmt.Sprintf("Dual-Force VdW %.3g min-dist %.3g", r[KeyObjective], r[KeyMeanMinDistance])
}

func (t *trainer) Plot(dir string) error {
	var behaviours []string
	if b := t.d.Behaviours; b != nil {
		behaviours = b.Names
	}
	return WritePlots(filepath.Join(dir, run.MetricsFile), dir, t.cfg.Skills, t.cfg.Loop.Eps, behaviours)
}

// learners are every skill's learners and generator, as a checkpoint holds them.
func (t *trainer) learners() []skillset.Learners {
	ls := make([]skillset.Learners, len(t.values))
	for i := range ls {
		ls[i] = skillset.Learners{Value: t.values[i], Policy: t.policies[i], Source: t.srcs[i]}
	}
	return ls
}

func (t *trainer) Checkpoint() (*checkpoint.File, error) {
	saved, err := run.SaveConfig(t.cfg.Run, t.cfg)
	if err != nil {
		return nil, fmt.Errorf("dualforce: %w", err)
	}
	s := t.loop.State()
	f32, f64 := s.Arrays()
	f32["reward"] = t.rE
	// The manifest's "state" object: each skill's generator and optimiser step counts.
	st, err := skillset.SaveLearners(t.learners(), f32)
	if err != nil {
		return nil, fmt.Errorf("dualforce: %w", err)
	}
	stJSON, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("dualforce: %w", err)
	}
	return &checkpoint.File{
		Algorithm: Algorithm, Task: t.d.Task, Digest: t.d.Digest, Contract: t.d.Contract, Iteration: s.Iteration,
		Config: saved, State: stJSON, Float32: f32, Float64: f64,
	}, nil
}

// ErrResume reports a checkpoint whose content does not fit the run.
var ErrResume = errors.New("dualforce: checkpoint does not fit this run")

func (t *trainer) restore(f *checkpoint.File) error {
	var st skillset.SavedLearners
	if err := json.Unmarshal(f.State, &st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if !slices.Equal(f.Float32["reward"], t.rE) {
		return fmt.Errorf("%w: the imitation reward is not the one the run started with", ErrResume)
	}
	if err := skillset.RestoreLearners(t.learners(), st, f.Float32); err != nil {
		return fmt.Errorf("%w: %w", ErrResume, err)
	}
	s, err := StateFromArrays(f.Float32, f.Float64, f.Iteration, t.cfg.Skills, t.cfg.Policy.Latent, t.d.FeatureDim)
	if err != nil {
		return err
	}
	return t.loop.Restore(s)
}

// bank exports every stored latent with its skill's last (deployed) policy.
func (t *trainer) bank() (*skills.Bank, error) {
	slots := make([]*nn.Conditioned[float32], len(t.policies))
	for i, p := range t.policies {
		var err error
		if slots[i], err = p.Deployed(); err != nil {
			return nil, err
		}
	}
	return exportBank(t.d.Contract, slots, t.loop.Latents(), t.bankFRE)
}
