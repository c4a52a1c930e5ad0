package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/trainer/eval"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/run"
)

// fixtureResult is a hand-made navigation evaluation: the SMODICE-expert (the filter reference,
// straight over the box) and six latents of three skills (going left, right and over) at two
// iterations each, of which skill 2's first latent fails the filter; every latent also ran in
// the three fenced worlds.
func fixtureResult() *eval.Result {
	features := []string{"vx", "vy", "vz", "wx", "wy", "wz"}
	res := &eval.Result{
		Task: "navigation", World: "obstacle", Seed: 1, Rollouts: 2, EpisodeSeconds: 10, Discount: 1,
		Features: features, PolicySteps: 7000, Ticks: 140000, Seconds: 35, FilterFraction: 0.5,
	}
	ref := 0
	res.FilterReference = &ref
	type latent struct {
		label       string
		skill, iter int
		side        float64 // +1 left, -1 right, 0 over
		ret         float64
		tag         string
		fenced      map[string]float64
		passed      bool
	}
	latents := []latent{
		{"SMODICE-expert", 0, 0, 0, 10, "over", map[string]float64{"obstacle_fence_left": 0.6, "obstacle_fence_right": 0.5, "obstacle_fenced": 0.3}, true},
		{"skill0-iter1", 0, 1, 1, 8, "left", map[string]float64{"obstacle_fence_left": 0.1, "obstacle_fence_right": 0.93, "obstacle_fenced": 0.2}, true},
		{"skill0-iter2", 0, 2, 1, 9, "left", map[string]float64{"obstacle_fence_left": 0.0, "obstacle_fence_right": 0.97, "obstacle_fenced": 0.25}, true},
		{"skill1-iter1", 1, 1, -1, 7, "right", map[string]float64{"obstacle_fence_left": 0.9, "obstacle_fence_right": 0.05, "obstacle_fenced": 0.2}, true},
		{"skill1-iter2", 1, 2, -1, 7.5, "right", map[string]float64{"obstacle_fence_left": 0.95, "obstacle_fence_right": 0.0, "obstacle_fenced": 0.3}, true},
		{"skill2-iter1", 2, 1, 0, 3, "over", map[string]float64{"obstacle_fence_left": 0.4, "obstacle_fence_right": 0.4, "obstacle_fenced": 0.4}, false},
		{"skill2-iter2", 2, 2, 0, 9.5, "over", map[string]float64{"obstacle_fence_left": 0.7, "obstacle_fence_right": 0.7, "obstacle_fenced": 0.35}, true},
	}
	for i, l := range latents {
		psi := []float64{0.4 + 0.01*float64(l.iter), 0.3 * l.side, 0, 0, 0, 0.2 * l.side}
		if l.tag == "over" {
			psi[2] = 0.15 // stepping up
		}
		passed := l.passed
		s := eval.Summary{
			Label: l.label, Latent: i, Skill: l.skill, Iteration: l.iter, MeanReturn: l.ret, StdReturn: 0.5,
			GoalRate: 0.5 + 0.05*float64(i), FallRate: 0.1, MeanSteps: 500, Psi: psi, Measured: []string{l.tag},
			WorldGoalRate: l.fenced, Passed: &passed,
			Descriptors: eval.Descriptors{Height: 0.24, ForwardVel: 0.3, LateralVel: 0.05 * l.side},
		}
		if i == 0 {
			s.Skill = 0
		}
		for k := range 2 {
			s.Rollouts = append(s.Rollouts, eval.Rollout{Seed: uint64(k + 1), Return: l.ret, Steps: 250, GoalStep: 200, Psi: psi, Path: detour(l.side, 0.02*float64(k))})
		}
		res.Subjects = append(res.Subjects, s)
	}
	res.Distances = make([][]float64, len(res.Subjects))
	for i, a := range res.Subjects {
		res.Distances[i] = make([]float64, len(res.Subjects))
		for j, b := range res.Subjects {
			ss := 0.0
			for k := range a.Psi {
				ss += (a.Psi[k] - b.Psi[k]) * (a.Psi[k] - b.Psi[k])
			}
			res.Distances[i][j] = math.Sqrt(ss)
		}
	}
	res.AfterSwitch = &eval.AfterSwitchResult{Start: 2, Candidates: []int{4, 6}, Worlds: []string{"obstacle", "obstacle_fence_left"}, RolloutsPerPair: 30,
		Rates: []eval.AfterSwitchRate{
			{Latent: 4, World: "obstacle_fence_left", Switches: 30, Goal: 6, Fell: 1},
			{Latent: 6, World: "obstacle", Switches: 3, Goal: 1},
		}}
	return res
}

// detour is a path from (0, 0) to (2, 0) bulging to side (+1 left, -1 right; 0 straight over
// the box, the base rising as it steps up).
func detour(side, jitter float64) *eval.Path {
	p := &eval.Path{}
	for k := range 251 {
		x := 2 * float64(k) / 250
		y := side*0.7*math.Sin(math.Pi*x/2) + jitter
		h := 0.24
		if side == 0 && x > 0.85 && x < 1.15 {
			h = 0.29
		}
		p.X, p.Y, p.Height = append(p.X, x), append(p.Y, y), append(p.Height, h+0.01*math.Sin(8*x))
	}
	return p
}

// writeRun makes a run directory holding res as eval/eval.json and a Dual-Force-shaped metrics
// log with per-skill columns.
func writeRun(t *testing.T, name string, res *eval.Result) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "eval"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "eval", EvalFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := metrics.Create(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	for it := 1; it <= 50; it++ {
		rec := map[string]any{"iteration": it, "vdw_objective": math.Log(float64(it)), "mean_min_distance": 1 - math.Exp(-float64(it)/10)}
		for i := range 3 {
			rec[fmt.Sprintf("phi_%d", i)] = 5 * math.Exp(-float64(it)/(10+5*float64(i)))
			rec[fmt.Sprintf("sigma_%d", i)] = 1 / (1 + math.Exp(-float64(it-25+5*i)/8))
		}
		if err := log.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	// The SMODICE run it read r_E from, with judged checkpoints.
	if err := os.MkdirAll(filepath.Join(dir, "smodice"), 0o755); err != nil {
		t.Fatal(err)
	}
	checks := `{"iteration":100,"score":18.7,"summary":"return 18.7","best":true}` + "\n" + `{"iteration":200,"score":903.1,"summary":"return 903.1","best":true}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "smodice", run.ChecksFile), []byte(checks), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
