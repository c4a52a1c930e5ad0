package smodice

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// Checkpoint is a run's whole state after an iteration: what resuming needs
// to continue bit-identically, and what export needs to build the bank. On
// disk it is a checkpoint.File (run.CheckpointFile in the run directory).
type Checkpoint struct {
	Config Config
	Task   string
	// Digest identifies the raw data the run trains on.
	Digest [sha256.Size]byte
	// Contract carries the fitted normaliser and feature statistics.
	Contract   skills.Contract
	Disc       disc.Report
	DiscParams []float32
	// Reward is r_E of every offline transition.
	Reward    []float32
	Iteration int
	// RNG is the learners' generator (math/rand/v2 PCG, MarshalBinary).
	RNG []byte
	// V and Pi are the value and policy learners' states.
	V  dice.ValueState
	Pi wbc.State
	// Estimate is computed from the weights of the checkpoint's iteration.
	Estimate Estimate
}

// Estimate describes the occupancy the trained policy imitates, from the
// whole-set weights w of one iteration.
type Estimate struct {
	Weights dice.WeightStats
	// Constraint is the paper's phi = log N + sum w (log w - r_E): an
	// estimate of KL(d_pi || d_E) up to a constant.
	Constraint float64
	// Psi is the offline successor-feature estimate sum_i w_i phi(s_i).
	Psi []float32
	// ExpertMass is the weight on expert-labelled transitions (NaN when
	// the labels are unknown).
	ExpertMass float64
}

// ErrCheckpoint wraps every reason a checkpoint is refused.
var ErrCheckpoint = checkpoint.ErrCheckpoint

// state is the checkpoint's small state, the manifest's "state" object.
type state struct {
	Disc            disc.Report `json:"discriminator"`
	RNG             []byte      `json:"rng"`
	ValueAdamSteps  int         `json:"value_adam_steps"`
	PolicyAdamSteps int         `json:"policy_adam_steps"`
	ESS             metrics.Num `json:"ess"`
	MaxW            metrics.Num `json:"max_w"`
	KL              metrics.Num `json:"kl"`
	Constraint      metrics.Num `json:"constraint"`
	ExpertMass      metrics.Num `json:"expert_mass"`
}

// arrays lists the checkpoint's arrays by name: the policy's average only
// when its configuration keeps one.
func (ck *Checkpoint) arrays() map[string]*[]float32 {
	a := map[string]*[]float32{
		"disc_params": &ck.DiscParams, disc.RewardArray: &ck.Reward,
		"value": &ck.V.Params, "value_adam_m": &ck.V.Adam.M, "value_adam_v": &ck.V.Adam.V,
		"policy": &ck.Pi.Params, "policy_adam_m": &ck.Pi.Adam.M, "policy_adam_v": &ck.Pi.Adam.V,
		"psi": &ck.Estimate.Psi,
	}
	if ck.Config.Policy.Average > 0 {
		a["policy_average"] = &ck.Pi.Average
	}
	return a
}

func (ck *Checkpoint) file() (*checkpoint.File, error) {
	saved, err := run.SaveConfig(ck.Config.Run, ck.Config)
	if err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	e := ck.Estimate
	st, err := json.Marshal(state{
		Disc: ck.Disc, RNG: ck.RNG, ValueAdamSteps: ck.V.Adam.Steps, PolicyAdamSteps: ck.Pi.Adam.Steps,
		ESS: metrics.Num(e.Weights.ESS), MaxW: metrics.Num(e.Weights.Max), KL: metrics.Num(e.Weights.KL),
		Constraint: metrics.Num(e.Constraint), ExpertMass: metrics.Num(e.ExpertMass),
	})
	if err != nil {
		return nil, fmt.Errorf("smodice: %w", err)
	}
	f := &checkpoint.File{
		Algorithm: Algorithm, Task: ck.Task, Digest: ck.Digest, Contract: ck.Contract, Iteration: ck.Iteration,
		Config: saved, State: st, Float32: map[string][]float32{},
	}
	for name, a := range ck.arrays() {
		f.Float32[name] = *a
	}
	return f, nil
}

// FromFile reads an SMODICE checkpoint out of a checkpoint file and checks
// what the file format cannot: the algorithm, the configuration, every
// array's presence and the sizes the networks imply.
func FromFile(f *checkpoint.File) (*Checkpoint, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if f.Algorithm != Algorithm {
		return nil, bad("a %s checkpoint, not %s", f.Algorithm, Algorithm)
	}
	var saved run.SavedConfig
	if err := strictJSON(f.Config, &saved); err != nil {
		return nil, bad("config: %v", err)
	}
	ck := &Checkpoint{Task: f.Task, Digest: f.Digest, Contract: f.Contract, Iteration: f.Iteration}
	if err := strictJSON(saved.Config, &ck.Config); err != nil {
		return nil, bad("config: %v", err)
	}
	ck.Config.Run = saved.Settings
	var st state
	if err := strictJSON(f.State, &st); err != nil {
		return nil, bad("state: %v", err)
	}
	ck.Disc, ck.RNG = st.Disc, st.RNG
	ck.V.Adam.Steps, ck.Pi.Adam.Steps = st.ValueAdamSteps, st.PolicyAdamSteps
	ck.Estimate = Estimate{
		Weights:    dice.WeightStats{ESS: float64(st.ESS), Max: float64(st.MaxW), KL: float64(st.KL)},
		Constraint: float64(st.Constraint), ExpertMass: float64(st.ExpertMass),
	}
	arrays := ck.arrays()
	if len(f.Float32) != len(arrays) || len(f.Float64) != 0 {
		return nil, bad("%d float32 and %d float64 arrays, want %d and none", len(f.Float32), len(f.Float64), len(arrays))
	}
	for name, dst := range arrays {
		x, err := f.Float32Array(name, -1)
		if err != nil {
			return nil, err
		}
		*dst = x
	}
	if err := ck.validate(); err != nil {
		return nil, bad("%v", err)
	}
	return ck, nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// validate checks what Policy and Bank rely on beyond the file format.
func (ck *Checkpoint) validate() error {
	c := &ck.Config
	switch {
	case ck.Iteration > c.Run.Iterations:
		return fmt.Errorf("iteration %d of %d", ck.Iteration, c.Run.Iterations)
	case len(ck.Estimate.Psi) != ck.Contract.Features.Dim(ck.Contract.Layout):
		return fmt.Errorf("psi has %d values, features %d", len(ck.Estimate.Psi), ck.Contract.Features.Dim(ck.Contract.Layout))
	case len(ck.V.Adam.M) != len(ck.V.Params) || len(ck.V.Adam.V) != len(ck.V.Params) ||
		len(ck.Pi.Adam.M) != len(ck.Pi.Params) || len(ck.Pi.Adam.V) != len(ck.Pi.Params) ||
		(ck.Pi.Average != nil && len(ck.Pi.Average) != len(ck.Pi.Params)):
		return errors.New("optimiser moments do not match the parameters")
	}
	return c.validate()
}

// Read reads the SMODICE checkpoint at path (a run directory's
// run.CheckpointFile).
func Read(path string) (*Checkpoint, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	ck, err := FromFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ck, nil
}

// Policy rebuilds the checkpoint's trained policy.
func (ck *Checkpoint) Policy() (*nn.Conditioned[float32], *nn.SquashedGaussian[float32], error) {
	net, err := wbc.Rebuild(ck.Contract.Layout.Dim(), skills.NumJoints, ck.Config.Policy, ck.Pi.Deployed())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return net, ck.Config.Policy.Head(net, skills.NumJoints), nil
}
