package eval

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/collect"
)

// Estimator accuracy while the runtime trots the robot with a fitted bank: the estimator runs
// inside the core on the board's sensor packets, ground truth comes from MuJoCo.
func TestEstimatorWhileTrotting(t *testing.T) {
	bank := trotBank(t)
	cfg := shortConfig(t, 2, 4)
	cfg.Traces, cfg.Paths = true, 1
	res, err := Evaluate(t.Context(), cfg, Latents(bank))
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Validate(); err != nil {
		t.Fatalf("an evaluation's own result: %v", err)
	}
	s := res.Subjects[0]
	checkDescriptors(t, &s)
	t.Logf("%s: return %.1f ± %.1f of %d steps, falls %.0f%%; estimator base velocity RMSE %.4f m/s (x %.4f, y %.4f, z %.4f)",
		s.Label, s.MeanReturn, s.StdReturn, cfg.steps(), 100*s.FallRate, s.VelRMSENorm, s.VelRMSE[0], s.VelRMSE[1], s.VelRMSE[2])
	for _, r := range s.Rollouts {
		d := walkedDistance(&r)
		t.Logf("  rollout seed %#x: return %.1f, walked %.2f m, mean forward speed %.3f m/s", r.Seed, r.Return, d, d/cfg.Task.EpisodeSeconds)
		if r.Fell || d < 0.5 {
			t.Fatalf("the fitted bank does not trot: fell %v, %.2f m in %v s", r.Fell, d, cfg.Task.EpisodeSeconds)
		}
	}
	// Goal < 0.1 m/s; measured 0.047-0.051 (z dominates: the stance-foot odometry misses the
	// body's bounce), x 0.018-0.023.
	if s.VelRMSENorm > 0.08 || math.Hypot(s.VelRMSE[0], s.VelRMSE[1]) > 0.05 {
		t.Fatalf("estimator RMSE %.4f m/s (planar %.4f)", s.VelRMSENorm, math.Hypot(s.VelRMSE[0], s.VelRMSE[1]))
	}
	if s.MeanReturn < 0.5*float64(cfg.steps()) {
		t.Fatalf("mean return %.1f of at most %d: the commanded 0.3 m/s is not tracked", s.MeanReturn, cfg.steps())
	}
}

// checkDescriptors checks a summary's descriptors and paths against its rollouts' traces: the
// descriptors are the means of the traced ground truth, the first rollout's path is its trace.
func checkDescriptors(t *testing.T, s *Summary) {
	t.Helper()
	var height, forward, lateral, summed float64
	for k, r := range s.Rollouts {
		tr := r.Trace
		n := float64(len(tr.Height))
		h, vx, vy := 0.0, 0.0, 0.0
		for i := range tr.Height {
			h, vx, vy = h+tr.Height[i]/n, vx+tr.LinVel[i][0]/n, vy+tr.LinVel[i][1]/n
		}
		d := r.Descriptors
		if math.Abs(d.Height-h) > 1e-9 || math.Abs(d.ForwardVel-vx) > 1e-9 || math.Abs(d.LateralVel-vy) > 1e-9 {
			t.Fatalf("rollout %d: descriptors %+v, trace means height %v, vx %v, vy %v", k, d, h, vx, vy)
		}
		height, forward, lateral = height+h, forward+vx, lateral+vy
		summed++
		switch {
		case k == 0 && (r.Path == nil || !slices.Equal(r.Path.Height, tr.Height) || len(r.Path.X) != len(tr.Pos) || r.Path.Y[3] != tr.Pos[3][1]):
			t.Fatalf("rollout 0 kept no path, or not its trace's: %+v", r.Path)
		case k > 0 && r.Path != nil:
			t.Fatalf("rollout %d kept a path beyond Config.Paths", k)
		}
	}
	if d := s.Descriptors; math.Abs(d.Height-height/summed) > 1e-9 || math.Abs(d.ForwardVel-forward/summed) > 1e-9 || math.Abs(d.LateralVel-lateral/summed) > 1e-9 {
		t.Fatalf("summary descriptors %+v are not the rollouts' mean", d)
	}
	t.Logf("%s: mean base height %.3f m, forward %.3f m/s, lateral %.3f m/s, yaw rate %.3f rad/s; measured tags %q",
		s.Label, s.Descriptors.Height, s.Descriptors.ForwardVel, s.Descriptors.LateralVel, s.Descriptors.YawRate, s.Measured)
}

// stillNavigation is a navigation bank that holds the default pose, and the navigation
// settings of rollouts episodes of seconds after a one-second stand-up.
func stillNavigation(t *testing.T, rollouts int, seconds float64) (*skills.Bank, Config) {
	t.Helper()
	c := skillstest.Contract(t, skills.Navigation171())
	c.Kp, c.Kd, c.EpisodeSeconds = collect.Kp, collect.Kd, 12
	bank := skillstest.Constant(t, c, [skills.NumJoints]float32{})
	cfg, err := TaskConfig(collect.TaskNavigation)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rollouts, cfg.Task.EpisodeSeconds, cfg.StandUp, cfg.Settle = rollouts, seconds, time.Second, 0
	return bank, cfg
}

// Same seed, same numbers, bit for bit, whatever the number of workers; another seed differs.
func TestEvaluateIsDeterministic(t *testing.T) {
	bank := trotBank(t)
	subjects := Latents(bank)
	subjects = append(subjects, Subject{Label: "still", Bank: constantBank(t, [skills.NumJoints]float32{}), Latent: 0})
	cfg := shortConfig(t, 3, 1)
	cfg.Noise = sim.Noise{EncoderStd: 1e-3, GyroStd: 5e-3, AccelStd: 0.05}
	run := func(workers int, seed uint64) *Result {
		c := cfg
		c.Workers, c.Seed = workers, seed
		res, err := Evaluate(t.Context(), c, subjects)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, other := run(1, 11), run(2, 11), run(2, 12)
	for i := range a.Subjects {
		for k := range a.Subjects[i].Rollouts {
			ra, rb := a.Subjects[i].Rollouts[k], b.Subjects[i].Rollouts[k]
			if math.Float64bits(ra.Return) != math.Float64bits(rb.Return) || !reflect.DeepEqual(ra, rb) {
				t.Fatalf("subject %d rollout %d: %+v with 1 worker, %+v with 2", i, k, ra, rb)
			}
		}
	}
	if !reflect.DeepEqual(a.Subjects, b.Subjects) || !reflect.DeepEqual(a.Distances, b.Distances) {
		t.Fatal("summaries differ between 1 and 2 workers")
	}
	if a.Subjects[0].Rollouts[0].Return == other.Subjects[0].Rollouts[0].Return {
		t.Fatal("another seed gave the same return")
	}
	for _, s := range a.Subjects {
		t.Logf("%s: returns %.6f %.6f %.6f", s.Label, s.Rollouts[0].Return, s.Rollouts[1].Return, s.Rollouts[2].Return)
	}
	if d := a.Distances[0][1]; !(d > 0) || a.Distances[0][0] != 0 {
		t.Fatalf("SF distances %v: a trot and a still stand should differ", a.Distances)
	}
}

// A navigation bank runs on the robot's perception (mocap pose and height map) in the obstacle
// world: no perception fault, features of the navigation projection, goal rewards measured.
func TestNavigationRunsOnPerception(t *testing.T) {
	bank, cfg := stillNavigation(t, 2, 1)
	cfg.Traces = true
	res, err := Evaluate(t.Context(), cfg, Latents(bank))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Subjects[0]
	if s.FallRate != 0 || len(s.Psi) != 6 || res.World != "obstacle" {
		t.Fatalf("summary %+v in world %q", s, res.World)
	}
	for _, r := range s.Rollouts {
		if r.Fault != "" || r.Steps != cfg.steps() || r.GoalStep != -1 || r.Route != "" || r.Ticks < 20*r.Steps+1000 {
			t.Fatalf("rollout %+v", r)
		}
		// Standing still earns no progress: every reward is the change of a distance that does
		// not change, and the start is far from the goal.
		if math.Abs(r.Return) > 0.5 {
			t.Fatalf("a robot standing still earned %v", r.Return)
		}
		// It ends where it stood, about 2 m short of the (jittered) goal.
		if g := r.Goal; g == nil || math.Abs(r.GoalDistance-math.Hypot(r.FinalPos[0]-g[0], r.FinalPos[1]-g[1])) > 1e-12 ||
			!(r.GoalDistance > 1.5) || g[2] != 0.25 {
			t.Fatalf("goal %v, final distance %v from %v", g, r.GoalDistance, r.FinalPos)
		}
	}
	if near, missed := NearMisses(s.Rollouts, 0.3); near != 0 || missed != len(s.Rollouts) {
		t.Fatalf("standing still: %d near misses of %d, want 0 of %d", near, missed, len(s.Rollouts))
	}

	// A dataset collected in a world file names that file as its task's world, and the
	// training checks evaluate there.
	file := filepath.Join(t.TempDir(), "high_box.yaml")
	if err := os.WriteFile(file, []byte("name: high_box\nbox: {x: 1.0, height: 0.10}\ngoal: {x: 2.0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Task.World, cfg.Traces = file, false
	if res, err = Evaluate(t.Context(), cfg, Latents(bank)); err != nil || res.World != "high_box" {
		t.Fatalf("in the world file %s: world %v, %v", file, res, err)
	}
	cfg.Task.World = filepath.Join(t.TempDir(), "missing.yaml")
	if _, err = Evaluate(t.Context(), cfg, Latents(bank)); !errors.Is(err, ErrConfig) {
		t.Fatalf("in a missing world file: %v, want ErrConfig", err)
	}
	if a, b := s.Rollouts[0].Seed, s.Rollouts[1].Seed; a == b {
		t.Fatal("two rollouts drew the same world seed")
	}
}

func TestNearMisses(t *testing.T) {
	goal := &[3]float64{2, 0, 0.25}
	rollouts := []Rollout{
		{GoalStep: 100, Goal: goal, GoalDistance: 1},  // reached, then walked on: not a miss
		{GoalStep: -1, Goal: goal, GoalDistance: 0.3}, // stopped 0.05 m short
		{GoalStep: -1, Goal: goal, GoalDistance: 0.54},
		{GoalStep: -1, Goal: goal, GoalDistance: 0.56}, // past 0.3 m from the edge
		{GoalStep: -1}, // a world without a goal
	}
	if near, missed := NearMisses(rollouts, 0.3); near != 2 || missed != 3 {
		t.Fatalf("%d near of %d missed, want 2 of 3", near, missed)
	}
}

// A rollout's robot gets the evaluation's sensor noise and host delay: with --host-delay it has
// lain that long, motors off, when the runtime connects.
func TestRolloutRobot(t *testing.T) {
	cfg := shortConfig(t, 1, 1)
	cfg.HostDelay, cfg.Noise = 700*time.Millisecond, sim.Noise{EncoderStd: 1e-4}
	rc := cfg.robot(nil, 3)
	if rc.Seed != 3 || rc.Noise != cfg.Noise || rc.HostDelay != cfg.HostDelay {
		t.Fatalf("robot config %+v", rc)
	}
	rc.Logger = slog.New(slog.DiscardHandler)
	r, err := robotboard.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tr := r.Truth(); tr.Time != cfg.HostDelay || tr.Pos[2] > 0.1 {
		t.Fatalf("the robot when the runtime connects: %+v, want 0.7 s and the base on the ground", tr)
	}
}

func TestConfigRefused(t *testing.T) {
	loco := constantBank(t, [skills.NumJoints]float32{})
	nav := skillstest.Constant(t, func() skills.Contract {
		c := skillstest.Contract(t, skills.Navigation171())
		c.EpisodeSeconds = 12
		return c
	}(), [skills.NumJoints]float32{})
	good := func() Config { return shortConfig(t, 1, 1) }
	tests := []struct {
		name     string
		edit     func(*Config)
		subjects []Subject
	}{
		{"unknown task", func(c *Config) { c.Task.Name = "dance" }, Latents(loco)},
		{"no rollouts", func(c *Config) { c.Rollouts = 0 }, Latents(loco)},
		{"no episode", func(c *Config) { c.Task.EpisodeSeconds = 0.001 }, Latents(loco)},
		{"NaN episode", func(c *Config) { c.Task.EpisodeSeconds = math.NaN() }, Latents(loco)},
		{"negative workers", func(c *Config) { c.Workers = -1 }, Latents(loco)},
		{"no stand-up", func(c *Config) { c.StandUp = 0 }, Latents(loco)},
		{"negative host delay", func(c *Config) { c.HostDelay = -time.Second }, Latents(loco)},
		{"discount past 1", func(c *Config) { c.Discount = 1.5 }, Latents(loco)},
		{"infinite start yaw", func(c *Config) { c.StartYaw = math.Inf(1) }, Latents(loco)},
		{"nothing", nil, nil},
		{"no bank", nil, []Subject{{Label: "x"}}},
		{"latent out of range", nil, []Subject{{Label: "x", Bank: loco, Latent: 1}}},
		{"navigation bank on locomotion", nil, Latents(nav)},
	}
	for _, tc := range tests {
		cfg := good()
		if tc.edit != nil {
			tc.edit(&cfg)
		}
		if _, err := Evaluate(context.Background(), cfg, tc.subjects); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
	if _, err := TaskConfig("dance"); !errors.Is(err, ErrConfig) {
		t.Errorf("TaskConfig(dance): %v", err)
	}
}

func TestEvaluateStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Evaluate(ctx, shortConfig(t, 4, 5), Latents(constantBank(t, [skills.NumJoints]float32{})))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

// A fault before the skill starts is a fall with no steps, not an error.
func TestFaultWhileStandingIsAFall(t *testing.T) {
	cfg := shortConfig(t, 1, 1)
	cfg.Core = func(c *core.Config) { c.Limits.JointUpper[1] = 0.5 } // the sunk robot's FL_HFE is past it
	res, err := Evaluate(t.Context(), cfg, Latents(constantBank(t, [skills.NumJoints]float32{})))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Subjects[0].Rollouts[0]
	if !r.Fell || r.Fault != "joint_limit" || r.Steps != 0 || res.Subjects[0].FallRate != 1 || r.Ticks == 0 || res.Ticks != r.Ticks {
		t.Fatalf("rollout %+v", r)
	}
}

// Filtering and writing back: online return, SF and measured tags land in a copy of the bank
// that validates (a measured tag of an earlier evaluation is replaced, a hand-written one kept),
// the verdict follows the reference's return, the original bank is untouched.
func TestWithOnlineResultsAndFilter(t *testing.T) {
	bank := constantBank(t, [skills.NumJoints]float32{})
	bank.Latents[0].Info.Tags = []string{"bc", TagHigh}
	ref := constantBank(t, [skills.NumJoints]float32{0.1})
	subjects := []Subject{{Label: "expert", Bank: ref}, {Label: "still", Bank: bank}}
	res := &Result{Subjects: []Summary{
		{Label: "expert", MeanReturn: 10, Psi: make([]float64, 12)},
		{Label: "still", MeanReturn: 4.5, Psi: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Measured: []string{TagLow}},
	}}
	if err := res.Filter(2, 0.5); !errors.Is(err, ErrConfig) {
		t.Fatalf("filter on a missing reference: %v", err)
	}
	if err := res.Filter(0, 0.5); err != nil {
		t.Fatal(err)
	}
	if !*res.Subjects[0].Passed || *res.Subjects[1].Passed {
		t.Fatalf("filter verdicts %v %v", *res.Subjects[0].Passed, *res.Subjects[1].Passed)
	}
	out, err := WithOnlineResults(bank, subjects, res)
	if err != nil {
		t.Fatal(err)
	}
	info := out.Latents[0].Info
	if *info.OnlineReturn != 4.5 || info.OnlinePsi[11] != 12 || *info.PassedFilter || !slices.Equal(info.Tags, []string{"bc", TagLow}) || info.GoalRate != nil {
		t.Fatalf("written back: %+v", info)
	}
	if bank.Latents[0].Info.OnlineReturn != nil || !slices.Equal(bank.Latents[0].Info.Tags, []string{"bc", TagHigh}) {
		t.Fatal("the original bank changed")
	}
	back := throughBankFile(t, out)
	if !reflect.DeepEqual(back.Latents[0].Info, info) {
		t.Fatalf("read back %+v, wrote %+v", back.Latents[0].Info, info)
	}
	if _, err := WithOnlineResults(bank, subjects[:1], res); !errors.Is(err, ErrConfig) {
		t.Fatalf("mismatched subjects: %v", err)
	}
}

// A navigation evaluation writes the measured route tag and the goal rate of every world it ran
// in into the bank, where the runtime's switcher reads them: rates of an earlier evaluation in
// other worlds stay, those in the worlds run again are replaced.
func TestWithOnlineResultsWritesRouteAndGoalRates(t *testing.T) {
	bank, _ := stillNavigation(t, 1, 1)
	bank.Latents[0].Info.Tags = []string{TagLeft, "bc"}
	bank.Latents[0].Info.GoalRate = map[string]float32{"obstacle_fenced": 0.9, "stairs": 0.2}
	subjects := Latents(bank)
	res := &Result{Task: collect.TaskNavigation, World: "obstacle", Subjects: []Summary{{
		MeanReturn: 3, Psi: make([]float64, 6), GoalRate: 0.5, Measured: []string{TagRight},
		WorldGoalRate: map[string]float64{"obstacle_fence_left": 1.0 / 3, "obstacle_fence_right": 1, "obstacle_fenced": 0},
	}}}
	out, err := WithOnlineResults(bank, subjects, res)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float32{"obstacle": 0.5, "obstacle_fence_left": 1.0 / 3, "obstacle_fence_right": 1, "obstacle_fenced": 0, "stairs": 0.2}
	if info := out.Latents[0].Info; !maps.Equal(info.GoalRate, want) || !slices.Equal(info.Tags, []string{"bc", TagRight}) {
		t.Fatalf("goal rates %v, tags %q", info.GoalRate, info.Tags)
	}
	if bank.Latents[0].Info.GoalRate["obstacle_fenced"] != 0.9 {
		t.Fatal("the original bank changed")
	}
	back := throughBankFile(t, out)
	m := core.LatentMeasures(back)
	if r := m.Route(0); r != corebus.RouteRight {
		t.Errorf("route read back %v", r.Names())
	}
	for w, rate := range want {
		if got, ok := m.Success(0, w); !ok || got != float64(rate) {
			t.Errorf("success in %s read back %v %v, want %v", w, got, ok, rate)
		}
	}
	if _, ok := m.Success(0, "moon"); ok {
		t.Error("a success in a world never evaluated")
	}
	res.World = "my world"
	if _, err := WithOnlineResults(bank, subjects, res); !errors.Is(err, skills.ErrWorldName) {
		t.Fatalf("a world name the bank cannot hold: %v", err)
	}
}

func TestWritePNG(t *testing.T) {
	res := &Result{Task: collect.TaskLocomotion, Rollouts: 30, EpisodeSeconds: 20}
	for i, name := range []string{"SMODICE-expert", "skill0-iter3", "skill1-iter3", "skill2-iter3"} {
		res.Subjects = append(res.Subjects, Summary{Label: name, MeanReturn: 100 - 20*float64(i), StdReturn: 5, FallRate: 0.1 * float64(i),
			Psi: []float64{float64(i), float64(i * i)}})
	}
	res.Distances = distances(res.Subjects)
	dir := t.TempDir()
	for _, r := range []*Result{res, {Task: "x", Subjects: res.Subjects[:1], Distances: [][]float64{{0}}}} {
		path := filepath.Join(dir, "eval.png")
		if err := WritePNG(path, r); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
			t.Fatalf("image %v", b)
		}
	}
	if err := WritePNG(filepath.Join(dir, "empty.png"), &Result{}); err == nil {
		t.Fatal("an empty result was drawn")
	}
}

// throughBankFile writes b to a bank file and reads it back.
func throughBankFile(t *testing.T, b *skills.Bank) *skills.Bank {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bank.npz")
	if err := skills.WriteBank(path, b); err != nil {
		t.Fatal(err)
	}
	back, err := skills.ReadBank(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}
