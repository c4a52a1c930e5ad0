package disc

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/run"
)

// RewardArray names the checkpoint array that holds r_E of every offline
// transition in a run that trained the discriminator (SMODICE-expert's).
const RewardArray = "reward"

// ErrOtherData reports a discriminator reward made from another offline
// dataset, task or layout than the data it is meant for.
var ErrOtherData = errors.New("disc: the discriminator's reward was made from other data")

// ReadReward reads r_E of every offline transition out of the run at path
// (a run directory or its checkpoint file) whose discriminator was trained,
// and checks that it belongs to d: the same task, layout and offline set
// (its length and the normaliser fitted on it, which depends on the
// offline states only, so d may be prepared with or without the expert
// set) and finite values. Other algorithms' runs and sibling trainers read
// the reward here, not through the algorithm that wrote it.
func ReadReward(path string, d *prep.Data) ([]float32, error) {
	if filepath.Ext(path) != filepath.Ext(run.CheckpointFile) {
		path = filepath.Join(path, run.CheckpointFile)
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	r, ok := f.Float32[RewardArray]
	if !ok {
		return nil, fmt.Errorf("%w: %s: a %s checkpoint without a discriminator reward", checkpoint.ErrArray, path, f.Algorithm)
	}
	if err := CheckReward(path, f.Task, f.Contract, r, d); err != nil {
		return nil, err
	}
	return r, nil
}

// CheckReward checks that r, the discriminator reward of a run for task
// with contract (named by source in errors), belongs to d: the same task,
// layout and offline set (its length and the normaliser fitted on it) and
// finite values.
func CheckReward(source, task string, contract skills.Contract, r []float32, d *prep.Data) error {
	c := d.Contract
	switch {
	case contract.Layout.Name != c.Layout.Name:
		return fmt.Errorf("%w: %s: its discriminator reads layout %q, the dataset is in %q: %w", ErrOtherData, source, contract.Layout.Name, c.Layout.Name, skills.ErrLayoutMismatch)
	case task != d.Task:
		return fmt.Errorf("%w: %s was trained for task %q, not %q", ErrOtherData, source, task, d.Task)
	case len(r) != d.Offline.Len() ||
		!slices.Equal(contract.Normaliser.Mean, c.Normaliser.Mean) || !slices.Equal(contract.Normaliser.Std, c.Normaliser.Std):
		return fmt.Errorf("%w: %s was trained on another offline dataset (%d transitions, other statistics) than this one (%d)",
			ErrOtherData, source, len(r), d.Offline.Len())
	}
	for i, v := range r {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: %s: r_E of transition %d is %v", checkpoint.ErrCheckpoint, source, i, v)
		}
	}
	return nil
}
