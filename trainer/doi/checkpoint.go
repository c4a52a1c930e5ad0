package doi

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/smodice"
)

// Names of a DOI checkpoint's arrays besides the skills' learners (skillset.SaveLearners):
// the imitation reward r_E, the SMODICE-expert's ratios when imitating one, the multipliers,
// each skill's Polyak-averaged weights (ArrayWeights and the skill's index; empty before the
// first iteration) and each classifier's parameters and Adam moments (ArrayClassifier, its
// index and ".params", ".adam_m" or ".adam_v").
const (
	ArrayReward     = disc.RewardArray
	ArrayRatios     = "doi.ratios"
	ArrayMu         = "doi.mu"
	ArrayWeights    = "doi.w."
	ArrayClassifier = "classifier"
)

// savedState is the checkpoint's small state, the manifest's "state" object: the skills'
// generators and optimiser step counts, the classifiers' generator and step counts.
type savedState struct {
	skillset.SavedLearners
	ClassifierRNG       []byte `json:"classifier_rng"`
	ClassifierAdamSteps []int  `json:"classifier_adam_steps"`
}

func weightsArray(z int) string { return fmt.Sprintf("%s%d", ArrayWeights, z) }

func classifierArray(j int, name string) string {
	return fmt.Sprintf("%s%d.%s", ArrayClassifier, j, name)
}

// learners are every skill's learners and generator, as a checkpoint holds them.
func (l *Loop) learners() []skillset.Learners {
	ls := make([]skillset.Learners, len(l.skills))
	for z, s := range l.skills {
		ls[z] = skillset.Learners{Value: s.v, Policy: s.pi, Source: s.src}
	}
	return ls
}

// Checkpoint records the loop's whole state after its last iteration: every skill's learners,
// generator and Polyak weights, the multipliers, the classifiers with their optimisers and
// generator, and the imitation target, so that a resumed run ends where an uninterrupted one
// does.
func (l *Loop) Checkpoint() (*checkpoint.File, error) {
	saved, err := run.SaveConfig(l.cfg.Run, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("doi: %w", err)
	}
	f32 := map[string][]float32{ArrayReward: l.rE}
	f64 := map[string][]float64{ArrayMu: slices.Clone(l.mu)}
	if l.ratios != nil {
		f64[ArrayRatios] = l.ratios
	}
	st := savedState{}
	if st.SavedLearners, err = skillset.SaveLearners(l.learners(), f32); err != nil {
		return nil, fmt.Errorf("doi: %w", err)
	}
	for z, s := range l.skills {
		f64[weightsArray(z)] = slices.Clone(s.polyak.W)
	}
	if st.ClassifierRNG, err = l.src.MarshalBinary(); err != nil {
		return nil, fmt.Errorf("doi: classifiers' generator: %w", err)
	}
	for j, c := range l.ensemble {
		params, adam := c.state()
		f32[classifierArray(j, "params")], f32[classifierArray(j, "adam_m")], f32[classifierArray(j, "adam_v")] = params, adam.M, adam.V
		st.ClassifierAdamSteps = append(st.ClassifierAdamSteps, adam.Steps)
	}
	stJSON, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("doi: %w", err)
	}
	return &checkpoint.File{
		Algorithm: Algorithm, Task: l.d.Task, Digest: l.d.Digest, Contract: l.d.Contract, Iteration: l.iteration,
		Config: saved, State: stJSON, Float32: f32, Float64: f64,
	}, nil
}

// resumedImitation is the imitation target a checkpoint of a run on d holds. An expert given
// on resume must be the one the run imitated.
func resumedImitation(d *prep.Data, f *checkpoint.File, expert *smodice.Checkpoint) (Imitation, error) {
	rE, err := f.Float32Array(ArrayReward, d.Offline.Len())
	if err != nil {
		return Imitation{}, err
	}
	im := Imitation{Reward: rE, Ratios: f.Float64[ArrayRatios]}
	if expert == nil {
		return im, nil
	}
	given, err := ExpertImitation(d, expert)
	if err != nil {
		return Imitation{}, err
	}
	if im.Ratios == nil || !slices.Equal(given.Reward, im.Reward) || !slices.Equal(given.Ratios, im.Ratios) {
		return Imitation{}, fmt.Errorf("%w: the run did not imitate this SMODICE run (resume without --smodice to continue with its own target)", run.ErrResumeMismatch)
	}
	return im, nil
}

// restore puts a fresh loop, built by NewLoop with the checkpoint's imitation target and
// configuration, into the checkpoint's state. Sizes and values are checked (multipliers within
// their bound, weights that are distributions, finite parameters).
func (l *Loop) restore(f *checkpoint.File) error {
	var st savedState
	if err := json.Unmarshal(f.State, &st); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := skillset.RestoreLearners(l.learners(), st.SavedLearners, f.Float32); err != nil {
		return err
	}
	mu := f.Float64[ArrayMu]
	if len(mu) != len(l.mu) {
		return fmt.Errorf("%d multipliers for %d skills", len(mu), len(l.mu))
	}
	for z, m := range mu {
		if !(m >= -skillset.MuBound && m <= skillset.MuBound) {
			return fmt.Errorf("mu_%d = %v", z, m)
		}
	}
	n := l.d.Offline.Len()
	for z, s := range l.skills {
		w, ok := f.Float64[weightsArray(z)]
		switch {
		case !ok || f.Iteration == 0 && len(w) != 0 || f.Iteration > 0 && len(w) != n:
			return fmt.Errorf("skill %d: %d Polyak weights at iteration %d for %d transitions", z, len(w), f.Iteration, n)
		case f.Iteration > 0:
			if err := dice.CheckWeights(w); err != nil {
				return fmt.Errorf("skill %d's weights: %w", z, err)
			}
			s.polyak.K, s.polyak.W = f.Iteration, slices.Clone(w)
			l.settle(s)
		}
	}
	if len(st.ClassifierAdamSteps) != len(l.ensemble) {
		return fmt.Errorf("%d classifiers saved, the run has %d", len(st.ClassifierAdamSteps), len(l.ensemble))
	}
	for j, c := range l.ensemble {
		adam := nn.AdamState[float32]{Steps: st.ClassifierAdamSteps[j], M: f.Float32[classifierArray(j, "adam_m")], V: f.Float32[classifierArray(j, "adam_v")]}
		if err := c.restore(f.Float32[classifierArray(j, "params")], adam); err != nil {
			return fmt.Errorf("classifier %d: %w", j, err)
		}
	}
	if err := l.src.UnmarshalBinary(st.ClassifierRNG); err != nil {
		return fmt.Errorf("classifiers' generator: %w", err)
	}
	l.iteration = f.Iteration
	copy(l.mu, mu)
	return nil
}
