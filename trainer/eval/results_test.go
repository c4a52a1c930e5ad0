package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallResult is a valid hand-made result: a reference and one latent, filtered, with a path
// and a fenced world's goal rate, and a rate after a switch.
func smallResult() *Result {
	ref, pass, fail := 0, true, false
	t := 3.5
	return &Result{
		Task: "navigation", World: "obstacle", Seed: 1, Rollouts: 1, EpisodeSeconds: 10, Discount: 1,
		Features: []string{"a", "b"}, FilterReference: &ref, FilterFraction: 0.5,
		Subjects: []Summary{
			{Label: "SMODICE-expert", Psi: []float64{0, 1}, GoalRate: 1, Passed: &pass, TimeToGoal: &t,
				Rollouts: []Rollout{{Return: 2, GoalStep: 174, Psi: []float64{0, 1}, Path: &Path{X: []float64{0, 1}, Y: []float64{0, 0}, Height: []float64{0.24, 0.25}}}}},
			{Label: "skill0-iter1", Skill: 0, Iteration: 1, Psi: []float64{1, 1}, Passed: &fail, WorldGoalRate: map[string]float64{"obstacle_fenced": 0.25},
				Rollouts: []Rollout{{Return: 0.5, GoalStep: -1, Psi: []float64{1, 1},
					Switches: []Switch{{Time: 3, From: 1, To: 0, Trigger: "no_progress", Blocked: []string{"right"}, World: "obstacle_fence_right", Considered: 1, Chosen: "best measured success"}}}}},
		},
		Distances: [][]float64{{0, 1}, {1, 0}},
		AfterSwitch: &AfterSwitchResult{Start: 1, Candidates: []int{0}, Worlds: []string{"obstacle_fence_right"}, RolloutsPerPair: 1,
			Rates: []AfterSwitchRate{{Latent: 0, World: "obstacle_fence_right", Switches: 1}}},
	}
}

func encodeResult(t testing.TB, r *Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeResult(t *testing.T) {
	good := encodeResult(t, smallResult())
	res, err := DecodeResult(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeResult(t, res), good) {
		t.Fatal("a decoded result does not encode back to the same JSON")
	}
	path := filepath.Join(t.TempDir(), "eval.json")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(path); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestDecodeResultRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(r *Result)
	}{
		{"unknown task", "task", func(r *Result) { r.Task = "swimming" }},
		{"no subjects", "no subjects", func(r *Result) { r.Subjects, r.Distances = nil, nil }},
		{"no feature fields", "no feature fields", func(r *Result) { r.Features = nil }},
		{"no successor features", "0 successor features", func(r *Result) { r.Subjects[0].Psi = nil }},
		{"no rollouts", "rollouts per latent", func(r *Result) { r.Rollouts = 0 }},
		{"short distance matrix", "distance rows", func(r *Result) { r.Distances = r.Distances[:1] }},
		{"ragged distance matrix", "columns", func(r *Result) { r.Distances[1] = r.Distances[1][:1] }},
		{"negative distance", "distance row 0", func(r *Result) { r.Distances[0][1] = -1 }},
		{"filter reference out of range", "filter reference", func(r *Result) { ref := 2; r.FilterReference = &ref }},
		{"psi of the wrong size", "1 online SFs, the first subject 2", func(r *Result) { r.Subjects[1].Psi = []float64{1} }},
		{"goal rate above 1", "goal rate", func(r *Result) { r.Subjects[0].GoalRate = 1.5 }},
		{"negative fall rate", "fall rate", func(r *Result) { r.Subjects[0].FallRate = -0.1 }},
		{"fenced rate above 1", "obstacle_fenced", func(r *Result) { r.Subjects[1].WorldGoalRate["obstacle_fenced"] = 2 }},
		{"unnamed world", "world \"\"", func(r *Result) { r.Subjects[1].WorldGoalRate[""] = 0.5 }},
		{"negative time to goal", "time to goal", func(r *Result) { v := -1.0; r.Subjects[0].TimeToGoal = &v }},
		{"filtered without a verdict", "filter verdict", func(r *Result) { r.Subjects[1].Passed = nil }},
		{"switch before the skill started", "switch 0 at -1 s", func(r *Result) { r.Subjects[1].Rollouts[0].Switches[0].Time = -1 }},
		{"switch to a negative latent", "latents 1 -> -2", func(r *Result) { r.Subjects[1].Rollouts[0].Switches[0].To = -2 }},
		{"goal of negative radius", "goal [2 0 -0.25]", func(r *Result) { r.Subjects[0].Rollouts[0].Goal = &[3]float64{2, 0, -0.25} }},
		{"negative distance to the goal", "ended -1 m", func(r *Result) {
			r.Subjects[0].Rollouts[0].Goal, r.Subjects[0].Rollouts[0].GoalDistance = &[3]float64{2, 0, 0.25}, -1
		}},
		{"ragged path", "path of 2 x, 2 y, 1 heights", func(r *Result) { r.Subjects[0].Rollouts[0].Path.Height = []float64{1} }},
		{"after switch without rollouts", "0 rollouts per pair", func(r *Result) { r.AfterSwitch.RolloutsPerPair = 0 }},
		{"after switch from a negative latent", "start latent -1", func(r *Result) { r.AfterSwitch.Start = -1 }},
		{"more goals than switches", "after switch: rate 0", func(r *Result) { r.AfterSwitch.Rates[0].Goal = 2 }},
		{"more falls than switches", "after switch: rate 0", func(r *Result) { r.AfterSwitch.Rates[0].Fell = 2 }},
		{"a rate without switches", "after switch: rate 0", func(r *Result) { r.AfterSwitch.Rates[0].Switches = 0 }},
		{"a rate without a world", "after switch: rate 0", func(r *Result) { r.AfterSwitch.Rates[0].World = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := smallResult()
			tc.edit(r)
			_, err := DecodeResult(bytes.NewReader(encodeResult(t, r)))
			if !errors.Is(err, ErrResult) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrResult mentioning %q", err, tc.want)
			}
		})
	}
	// Numbers JSON cannot hold (NaN) arrive as text the decoder refuses, not as values.
	for name, text := range map[string]string{
		"empty":         "",
		"not an object": "[1, 2]",
		"cut short":     string(encodeResult(t, smallResult()))[:100],
		"a string rate": strings.Replace(string(encodeResult(t, smallResult())), `"goal_rate":1`, `"goal_rate":"all"`, 1),
		"NaN":           strings.Replace(string(encodeResult(t, smallResult())), `"goal_rate":1`, `"goal_rate":NaN`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeResult(strings.NewReader(text)); !errors.Is(err, ErrResult) {
				t.Fatalf("got %v, want ErrResult", err)
			}
		})
	}
}

func TestValidateRefusesNonFinite(t *testing.T) {
	// Results built in memory (not read from JSON) can hold NaN.
	for name, edit := range map[string]func(r *Result){
		"return":     func(r *Result) { r.Subjects[0].MeanReturn = math.NaN() },
		"psi":        func(r *Result) { r.Subjects[1].Psi[0] = math.Inf(1) },
		"descriptor": func(r *Result) { r.Subjects[1].Descriptors.Height = math.NaN() },
		"path":       func(r *Result) { r.Subjects[0].Rollouts[0].Path.X[1] = math.NaN() },
		"distance":   func(r *Result) { r.Distances[1][0] = math.NaN() },
		"switch":     func(r *Result) { r.Subjects[1].Rollouts[0].Switches[0].Pos[0] = math.Inf(-1) },
	} {
		r := smallResult()
		edit(r)
		if err := r.Validate(); !errors.Is(err, ErrResult) {
			t.Errorf("%s: got %v, want ErrResult", name, err)
		}
	}
}

// FuzzDecodeResult: any input is a checked result or an ErrResult, never a panic, and an
// accepted result can be indexed as Validate promises.
func FuzzDecodeResult(f *testing.F) {
	f.Add(encodeResult(f, smallResult()))
	f.Add([]byte(`{"task":"locomotion","features":["a"],"rollouts_per_latent":1,"subjects":[{"psi":[0]}],"sf_distances":[[0]]}`))
	f.Add([]byte(`{"task":"navigation","subjects":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := DecodeResult(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrResult) {
				t.Fatalf("error %v is not ErrResult", err)
			}
			return
		}
		n := len(res.Subjects)
		for i := range res.Subjects {
			_ = res.Distances[i][n-1]
			_ = res.Subjects[i].Psi[len(res.Subjects[0].Psi)-1]
		}
	})
}
