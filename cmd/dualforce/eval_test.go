package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/eval"
)

// eval on two tiny constant banks (one the "expert"): summaries, files, the filter and the bank
// written back.
func TestEval(t *testing.T) {
	dir := t.TempDir()
	c := skillstest.Locomotion(t)
	c.Kp, c.Kd = collect.Kp, collect.Kd
	bankPath, expertPath := filepath.Join(dir, "bank.npz"), filepath.Join(dir, "expert.npz")
	if err := skills.WriteBank(bankPath, skillstest.Constant(t, c, [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	var lean [skills.NumJoints]float32
	lean[1], lean[4] = 0.5, 0.5
	if err := skills.WriteBank(expertPath, skillstest.Constant(t, c, lean)); err != nil {
		t.Fatal(err)
	}
	out, written := filepath.Join(dir, "out"), filepath.Join(dir, "evaluated.npz")
	code, stdout, stderr := dualforce("eval", "--bank", bankPath, "--expert", expertPath, "--task", "locomotion",
		"--rollouts", "2", "--seconds", "0.5", "--out", out, "--write-bank", written, "--noise")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "eval locomotion: 4 of 4 rollouts") {
		t.Errorf("progress lines: %q", stderr)
	}
	t.Log(stdout)
	for _, want := range []string{"locomotion in flat: 2 rollouts of 0.5 s", "SMODICE-expert", "constant", "policy steps/s", "eval.png", "evaluated.npz"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res eval.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Subjects) != 2 || len(res.Subjects[1].Rollouts) != 2 || res.Subjects[1].Rollouts[0].Steps != 25 || res.FilterReference == nil {
		t.Fatalf("eval.json: %+v", res)
	}
	img, err := os.ReadFile(filepath.Join(out, "eval.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
	back, err := skills.ReadBank(written)
	if err != nil {
		t.Fatal(err)
	}
	info := back.Latents[0].Info
	if info.OnlineReturn == nil || *info.OnlineReturn != res.Subjects[1].MeanReturn || len(info.OnlinePsi) != 12 || info.PassedFilter == nil {
		t.Fatalf("bank written back: %+v", info)
	}
}

// eval --fences --write-bank on a navigation bank that stands still: every latent's goal rate in
// the obstacle world and the three fenced ones lands in the bank (all 0), no route tag (no
// rollout got past the box), and the --obs-clip it ran with.
func TestEvalWritesGoalRatesIntoTheBank(t *testing.T) {
	dir := t.TempDir()
	nav := navigationContract(t)
	bankPath, written := filepath.Join(dir, "nav.npz"), filepath.Join(dir, "evaluated.npz")
	bank := skillstest.Constant(t, nav, [skills.NumJoints]float32{})
	bank.Latents[0].Info.Tags = []string{eval.TagLeft}
	if err := skills.WriteBank(bankPath, bank); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := dualforce("eval", "--bank", bankPath, "--task", "navigation", "--fences", "--rollouts", "1",
		"--seconds", "0.2", "--out", filepath.Join(dir, "out"), "--write-bank", written, "--obs-clip", "5", "--quiet")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	t.Log(stdout)
	back, err := skills.ReadBank(written)
	if err != nil {
		t.Fatal(err)
	}
	info := back.Latents[0].Info
	want := map[string]float32{"obstacle": 0, "obstacle_fence_left": 0, "obstacle_fence_right": 0, "obstacle_fenced": 0}
	if !maps.Equal(info.GoalRate, want) || len(info.Tags) != 0 {
		t.Fatalf("bank written back: goal rates %v, tags %q", info.GoalRate, info.Tags)
	}
	if c := back.Contract.Normaliser.Clip; c != 5 {
		t.Errorf("bank written back with observation clip %v, want the --obs-clip 5 it ran with", c)
	}
	if out := mustRun(t, "bank", "inspect", written); !strings.Contains(out, "clamped to +-5") {
		t.Errorf("bank inspect does not show the clip:\n%s", out)
	}
}

// navigationContract is a navigation bank's contract with the gains the data are collected
// with and the task's 12 s episodes.
func navigationContract(t *testing.T) skills.Contract {
	t.Helper()
	c := skillstest.Contract(t, skills.Navigation171())
	c.Kp, c.Kd, c.EpisodeSeconds = collect.Kp, collect.Kd, 12
	return c
}

// writeStandingNavigationBank writes a navigation bank whose one latent stands still to
// dir/nav.npz and returns the path.
func writeStandingNavigationBank(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "nav.npz")
	if err := skills.WriteBank(path, skillstest.Constant(t, navigationContract(t), [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	return path
}

// The switching flags reach the rollouts' cores: eval.json records the settings the core
// switched by, and a run with switching off records none; the bank's one latent stands still,
// so with switching on its route counts as blocked, with nowhere to go, after --stall-after.
func TestEvalRecordsTheSwitchingSettings(t *testing.T) {
	dir := t.TempDir()
	bankPath := writeStandingNavigationBank(t, dir)
	def := core.DefaultSwitchConfig()
	changed := def
	changed.StallAfter, changed.Restart, changed.KeepMeasured = 2*time.Second, 0, false
	for _, tc := range []struct {
		name  string
		flags []string
		want  *core.SwitchConfig
	}{
		{"switching off", nil, nil},
		{"defaults", []string{"--switching"}, &def},
		{"flags", []string{"--switching", "--keep-measured=false", "--stall-after", "2s", "--switch-restart", "0"}, &changed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			args := append([]string{"eval", "--bank", bankPath, "--task", "navigation", "--rollouts", "1", "--seconds", "4", "--out", out, "--quiet"}, tc.flags...)
			if code, _, stderr := dualforce(args...); code != 0 {
				t.Fatalf("eval exited %d: %s", code, stderr)
			}
			res, err := eval.ReadResult(filepath.Join(out, "eval.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Switching; (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("eval.json switching %+v, want %+v", got, tc.want)
			}
			stuck := res.Subjects[0].Rollouts[0].NowhereToGo
			if tc.want == nil {
				if len(stuck) != 0 {
					t.Fatalf("switching off: blocked routes recorded %+v", stuck)
				}
				return
			}
			if stall := tc.want.StallAfter.Seconds(); len(stuck) != 1 || stuck[0].Time < stall || stuck[0].Time > stall+0.5 {
				t.Fatalf("blocked with nowhere to go %+v: want once, about %v s in", stuck, stall)
			}
		})
	}
}

// eval --latents 0 --fences --after-switch --write-bank on two standing latents, the second
// tagged "left": the runtime starts the first (the one measured), which reaches no goal and is
// given no route, gives up on it after the stall time and switches to the left one wherever the
// left is not fenced (the task's world and the right fenced one), and the bank gets the left
// latent's goal rate after those switches (0), under the world matching what blocked (nothing
// known: the unfenced world).
func TestEvalMeasuresGoalRatesAfterASwitch(t *testing.T) {
	dir := t.TempDir()
	nav := navigationContract(t)
	bankPath, written, out := filepath.Join(dir, "nav.npz"), filepath.Join(dir, "evaluated.npz"), filepath.Join(dir, "out")
	var still [skills.NumJoints]float32
	bank := skillstest.ConstantSlots(t, nav, still, still)
	bank.Latents[1].Info.Tags = []string{eval.TagLeft}
	if err := skills.WriteBank(bankPath, bank); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := dualforce("eval", "--bank", bankPath, "--task", "navigation", "--latents", "0", "--fences", "--after-switch", "--rollouts", "3",
		"--seconds", "4", "--out", out, "--write-bank", written, "--quiet")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	t.Log(stdout)
	if !strings.Contains(stdout, "goal after a switch from latent 0") {
		t.Errorf("no table of goal rates after a switch in the summary")
	}
	res, err := eval.ReadResult(filepath.Join(out, "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []eval.AfterSwitchRate{{Latent: 1, World: "obstacle", Switches: 6}}
	if a := res.AfterSwitch; a == nil || a.Start != 0 || !slices.Equal(a.Candidates, []int{1}) || !slices.Equal(a.Rates, want) {
		t.Fatalf("eval.json after_switch %+v, want from latent 0 to [1]: %+v", a, want)
	}
	back, err := skills.ReadBank(written)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := back.Latents[1].Info.GoalRate["obstacle_after_switch"]; !ok || r != 0 || len(back.Latents[0].Info.GoalRate) != 4 {
		t.Fatalf("bank written back: goal rates %v and %v; want the left latent's rate after a switch (0), the start latent's four from the start",
			back.Latents[0].Info.GoalRate, back.Latents[1].Info.GoalRate)
	}
}

func TestEvalUsage(t *testing.T) {
	dir := t.TempDir()
	nav := skillstest.Contract(t, skills.Navigation171())
	nav.EpisodeSeconds = 12
	navPath := filepath.Join(dir, "nav.npz")
	if err := skills.WriteBank(navPath, skillstest.Constant(t, nav, [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	obstacle, err := os.ReadFile("../../sim/worlds/obstacle.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spaced := filepath.Join(dir, "spaced.yaml")
	if err := os.WriteFile(spaced, bytes.Replace(obstacle, []byte("name: obstacle"), []byte("name: my obstacle"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval"}, 2, "--bank and --task are required"},
		{[]string{"eval", "--bank", navPath, "--task", "dance"}, 2, "dance"},
		{[]string{"eval", "--bank", navPath, "--task", "locomotion", "--rollouts", "0"}, 2, "--rollouts 0"},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--host-delay", "-1s"}, 2, "--host-delay -1s"},
		{[]string{"eval", "--bank", navPath, "--task", "locomotion", "--world", "atlantis"}, 2, "atlantis"},
		{[]string{"eval", "--bank", navPath, "--task", "locomotion", "--quiet", "--out", dir}, 2, "cannot run the locomotion task"},
		{[]string{"eval", "--bank", filepath.Join(dir, "missing.npz"), "--task", "navigation"}, 1, "missing.npz"},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--world", spaced, "--write-bank", filepath.Join(dir, "w.npz")}, 2, `"my obstacle"`},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--latents", "0", "--max-latents", "3"}, 2, "give one"},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--after-switch"}, 2, "--after-switch needs --fences"},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--after-switch", "--fences", "--switching"}, 2, "no --switching"},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--latents", "1", "--out", filepath.Join(dir, "l1")}, 2, `"1" is not a latent index of this bank (0 to 0)`},
		{[]string{"eval", "--bank", navPath, "--task", "navigation", "--latents", "0,x", "--out", filepath.Join(dir, "lx")}, 2, `"x" is not a latent index`},
	} {
		code, _, stderr := dualforce(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestChooseLatents(t *testing.T) {
	c := skillstest.Locomotion(t)
	bank := skillstest.Constant(t, c, [skills.NumJoints]float32{})
	one := bank.Latents[0]
	for k := 1; k < 4; k++ {
		l := one
		l.Info.Iteration, l.Info.Name = k, ""
		bank.Latents = append(bank.Latents, l)
	}
	ret := 5.0
	bank.Latents[2].Info.OnlineReturn = &ret
	indices := func(ss []eval.Subject) []int {
		var out []int
		for _, s := range ss {
			out = append(out, s.Latent)
		}
		return out
	}
	for _, tc := range []struct {
		list string
		max  int
		want []int
	}{
		{"", 0, []int{0, 1, 2, 3}},
		{"", 2, []int{0, 3}},
		{"3, 1", 0, []int{3, 1}},
		{"best", 0, []int{2}},
	} {
		got, err := chooseLatents(bank, tc.list, tc.max)
		if err != nil || !slices.Equal(indices(got), tc.want) {
			t.Errorf("chooseLatents(%q, %d) = %v, %v; want %v", tc.list, tc.max, indices(got), err, tc.want)
		}
	}
	if _, err := chooseLatents(bank, "4", 0); !errors.Is(err, errUsage) {
		t.Errorf("index past the bank: %v", err)
	}
}

// Off a terminal the progress is a line per tenth of the rollouts, and a count that starts
// again (the next world of --fences) reports again from its own start.
func TestEvalProgressLogsEveryPass(t *testing.T) {
	var log bytes.Buffer
	progress := evalProgress(&log, "navigation (fences)", false)
	for range 2 {
		for done := 1; done <= 20; done++ {
			progress(done, 20)
		}
	}
	if n := strings.Count(log.String(), "of 20 rollouts"); n != 20 {
		t.Fatalf("%d progress lines over two passes of 20 rollouts, want 10 each:\n%s", n, log.String())
	}
	if evalProgress(&log, "x", true) != nil {
		t.Error("--quiet still reports progress")
	}
}
