package skillset

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// Learners are one skill's value and policy learners and the generator source they draw
// with: what a checkpoint keeps of a skill besides its loop's state.
type Learners struct {
	Value  *dice.Value
	Policy *wbc.Learner
	Source *rand.PCG
}

// SavedLearners is the part of a checkpoint's JSON state that SaveLearners writes: every
// skill's generator (MarshalBinary) and its optimisers' step counts (the network's, the
// latent input's).
type SavedLearners struct {
	RNG             [][]byte `json:"rng"`
	ValueAdamSteps  [][2]int `json:"value_adam_steps"`
	PolicyAdamSteps [][2]int `json:"policy_adam_steps"`
	// ValuePasses are the value learners' weight passes, for learners that
	// refresh one block a pass (dice.ValueConfig.RefreshRows); their kept
	// values are the array "value_cache".
	ValuePasses []int `json:"value_passes,omitempty"`
}

// ErrLearners reports saved learners that do not fit the run's.
var ErrLearners = errors.New("skillset: saved learners do not fit this run")

// LearnerArray names skill i's checkpoint array: "skill<i>.<name>".
func LearnerArray(i int, name string) string { return fmt.Sprintf("skill%d.%s", i, name) }

// valueCache names the array of a value learner's kept values.
const valueCache = "value_cache"

// policyAverage names the array of a policy learner's averaged parameters
// (wbc.Config.Average), present only when it keeps them.
const policyAverage = "policy_average"

// DeployedPolicy names the checkpoint array of skill i's deployed policy:
// the averaged parameters for learners that keep them (averaged), else the
// last iterate's.
func DeployedPolicy(i int, averaged bool) string {
	if averaged {
		return LearnerArray(i, policyAverage)
	}
	return LearnerArray(i, "policy")
}

// namedArray is an array of a checkpoint and where it lives.
type namedArray struct {
	name string
	x    *[]float32
}

// learnerArrays lists one skill's arrays in v and pi by name (LearnerArray's): parameters, and
// the "_m" and "_v" moments of every optimiser.
func learnerArrays(v *dice.ValueState, pi *wbc.State) []namedArray {
	return []namedArray{
		{"value", &v.Params}, {"policy", &pi.Params},
		{"value_adam_m", &v.Adam.M}, {"value_adam_v", &v.Adam.V},
		{"value_latent_adam_m", &v.LatentAdam.M}, {"value_latent_adam_v", &v.LatentAdam.V},
		{"policy_adam_m", &pi.Adam.M}, {"policy_adam_v", &pi.Adam.V},
		{"policy_latent_adam_m", &pi.LatentAdam.M}, {"policy_latent_adam_v", &pi.LatentAdam.V},
	}
}

// SaveLearners adds every skill's parameters and Adam moments to f32 as arrays named by
// LearnerArray, and returns the generators and step counts for the JSON state.
func SaveLearners(ls []Learners, f32 map[string][]float32) (SavedLearners, error) {
	var s SavedLearners
	for i, l := range ls {
		rng, err := l.Source.MarshalBinary()
		if err != nil {
			return SavedLearners{}, fmt.Errorf("skillset: generator of skill %d: %w", i, err)
		}
		v, pi := l.Value.State(), l.Policy.State()
		for _, a := range learnerArrays(&v, &pi) {
			f32[LearnerArray(i, a.name)] = *a.x
		}
		if v.Cache != nil {
			f32[LearnerArray(i, valueCache)] = v.Cache
		}
		if pi.Average != nil {
			f32[LearnerArray(i, policyAverage)] = pi.Average
		}
		s.ValuePasses = append(s.ValuePasses, v.Passes)
		s.RNG = append(s.RNG, rng)
		s.ValueAdamSteps = append(s.ValueAdamSteps, [2]int{v.Adam.Steps, v.LatentAdam.Steps})
		s.PolicyAdamSteps = append(s.PolicyAdamSteps, [2]int{pi.Adam.Steps, pi.LatentAdam.Steps})
	}
	return s, nil
}

// RestoreLearners puts every skill's learners and generator back as SaveLearners saved them
// in s and f32. Missing arrays, states for another number of skills or of other sizes are
// refused (ErrLearners, or the learners' own ErrState).
func RestoreLearners(ls []Learners, s SavedLearners, f32 map[string][]float32) error {
	n := len(ls)
	if len(s.RNG) != n || len(s.ValueAdamSteps) != n || len(s.PolicyAdamSteps) != n || (s.ValuePasses != nil && len(s.ValuePasses) != n) {
		return fmt.Errorf("%w: state for %d skills, run has %d", ErrLearners, len(s.RNG), n)
	}
	for i, l := range ls {
		steps := func(s [2]int, k int) nn.AdamState[float32] { return nn.AdamState[float32]{Steps: s[k]} }
		v := dice.ValueState{Adam: steps(s.ValueAdamSteps[i], 0), LatentAdam: steps(s.ValueAdamSteps[i], 1)}
		pi := wbc.State{Adam: steps(s.PolicyAdamSteps[i], 0), LatentAdam: steps(s.PolicyAdamSteps[i], 1)}
		for _, a := range learnerArrays(&v, &pi) {
			x, ok := f32[LearnerArray(i, a.name)]
			if !ok {
				return fmt.Errorf("%w: no array %s", ErrLearners, LearnerArray(i, a.name))
			}
			*a.x = x
		}
		if s.ValuePasses != nil {
			v.Passes, v.Cache = s.ValuePasses[i], f32[LearnerArray(i, valueCache)]
		}
		pi.Average = f32[LearnerArray(i, policyAverage)]
		if err := l.Value.Restore(v); err != nil {
			return fmt.Errorf("skill %d: %w", i, err)
		}
		if err := l.Policy.Restore(pi); err != nil {
			return fmt.Errorf("skill %d: %w", i, err)
		}
		if err := l.Source.UnmarshalBinary(s.RNG[i]); err != nil {
			return fmt.Errorf("%w: generator of skill %d: %w", ErrLearners, i, err)
		}
	}
	return nil
}
