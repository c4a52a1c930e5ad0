package fre

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/run"
)

// Algorithm names FRE pre-training in checkpoints.
const Algorithm = "fre"

// ErrCheckpoint wraps every reason a checkpoint is refused.
var ErrCheckpoint = checkpoint.ErrCheckpoint

// state is the checkpoint's small state, the manifest's "state" object.
type state struct {
	RNG       []byte `json:"rng"`
	AdamSteps int    `json:"adam_steps"`
}

// Names of the checkpoint's arrays.
const (
	paramsArray = "params"
	adamMArray  = "adam_m"
	adamVArray  = "adam_v"
)

// file is the trainer's state after its last step as a checkpoint of the
// run over src.
func (t *Trainer) file() (*checkpoint.File, error) {
	saved, err := run.SaveConfig(t.cfg.Run, t.cfg)
	if err != nil {
		return nil, fmt.Errorf("fre: %w", err)
	}
	s := t.State()
	st, err := json.Marshal(state{RNG: s.RNG, AdamSteps: s.Adam.Steps})
	if err != nil {
		return nil, fmt.Errorf("fre: %w", err)
	}
	src := t.prior.Src
	return &checkpoint.File{
		Algorithm: Algorithm, Task: src.Task, Digest: src.Digest(), Contract: src.Contract, Iteration: t.Steps(),
		Config: saved, State: st,
		Float32: map[string][]float32{paramsArray: s.Params, adamMArray: s.Adam.M, adamVArray: s.Adam.V},
	}, nil
}

// restoreFile continues from a checkpoint that run.Open has matched to this
// run (algorithm, source digest, task, configuration).
func (t *Trainer) restoreFile(f *checkpoint.File) error {
	var st state
	dec := json.NewDecoder(bytes.NewReader(f.State))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("%w: state: %w", ErrCheckpoint, err)
	}
	if st.AdamSteps != f.Iteration {
		return fmt.Errorf("%w: %d Adam steps at step %d", ErrCheckpoint, st.AdamSteps, f.Iteration)
	}
	if len(f.Float32) != 3 || len(f.Float64) != 0 {
		return fmt.Errorf("%w: %d float32 and %d float64 arrays, want 3 and none", ErrCheckpoint, len(f.Float32), len(f.Float64))
	}
	n := len(t.model.Arena.Params())
	s := State{RNG: st.RNG}
	s.Adam.Steps = st.AdamSteps
	for name, dst := range map[string]*[]float32{paramsArray: &s.Params, adamMArray: &s.Adam.M, adamVArray: &s.Adam.V} {
		x, err := f.Float32Array(name, n)
		if err != nil {
			return err
		}
		*dst = x
	}
	return t.Restore(s)
}

// Load rebuilds the trainer of the run whose checkpoint is at path (a run
// directory's run.CheckpointFile) over src, the source it was trained on
// (checked by digest): for exporting the frozen encoder (Export) to
// Dual-Force or a bank. ReadConfig gives the run's configuration first,
// for rebuilding the source with the run's seed.
func Load(src *Source, path string) (*Trainer, error) {
	f, cfg, err := readRun(path)
	if err != nil {
		return nil, err
	}
	if f.Digest != src.Digest() || f.Task != src.Task {
		return nil, fmt.Errorf("%w: %s was trained on other states or rewards", run.ErrResumeMismatch, path)
	}
	t, err := NewTrainer(src, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err)
	}
	if err := t.restoreFile(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadConfig returns the configuration of the run whose checkpoint is at
// path and the contract of the states it trained on (its feature fields
// are the phi of its prior's Dual-Force rewards).
func ReadConfig(path string) (Config, skills.Contract, error) {
	f, cfg, err := readRun(path)
	if err != nil {
		return cfg, skills.Contract{}, err
	}
	return cfg, f.Contract, nil
}

// readRun reads an FRE checkpoint and its configuration.
func readRun(path string) (*checkpoint.File, Config, error) {
	var cfg Config
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, cfg, err
	}
	if f.Algorithm != Algorithm {
		return nil, cfg, fmt.Errorf("%w: %s is a %s checkpoint, not %s", ErrCheckpoint, path, f.Algorithm, Algorithm)
	}
	var saved run.SavedConfig
	dec := json.NewDecoder(bytes.NewReader(f.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&saved); err != nil {
		return nil, cfg, fmt.Errorf("%w: %s: config: %w", ErrCheckpoint, path, err)
	}
	dec = json.NewDecoder(bytes.NewReader(saved.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, cfg, fmt.Errorf("%w: %s: config: %w", ErrCheckpoint, path, err)
	}
	cfg.Run = saved.Settings
	return f, cfg, nil
}
