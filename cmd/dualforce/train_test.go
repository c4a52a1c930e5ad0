package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/bc"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dice"
	"github.com/dualforce/dualforce/trainer/prep"
	trainrun "github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/smodice"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// writeSynthetic writes the small synthetic task's archives into dir and
// returns the offline file's path (the expert file sits next to it).
func writeSynthetic(t *testing.T, dir string) string {
	t.Helper()
	return writeSyntheticAt(t, filepath.Join(dir, "synthetic.npz"), 1)
}

// writeSyntheticAt writes the small synthetic task of data seed seed to
// path and its expert file next to it, and returns path.
func writeSyntheticAt(t *testing.T, path string, seed uint64) string {
	t.Helper()
	off, exp := datafiletest.Datasets(t, datafiletest.Small, seed)
	if err := datafile.WriteOffline(path, off); err != nil {
		t.Fatal(err)
	}
	if err := datafile.WriteExpert(datafile.ExpertPath(path), exp); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := dualforce(args...)
	if code != 0 {
		t.Fatalf("dualforce %s exited %d:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// TestTrainResumeExport trains through the command line, checks that an
// interrupted-and-resumed run writes the very same bank as a straight one,
// and that export of the checkpoint writes it too.
func TestTrainResumeExport(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	// No checks: an --iters 7 run judges its end, which the straight run does not.
	common := []string{"train", "smodice", "--offline", data, "--disc-steps", "30", "--batch", "64", "--checkpoint-every", "5", "--check-rollouts", "0", "--quiet"}

	straight := filepath.Join(dir, "straight")
	out := mustRun(t, append(common, "--out", straight, "--iters", "12")...)
	t.Log(out)
	for _, want := range []string{"discriminator: held-out accuracy", "iteration 12: ESS", "weight by behaviour (withheld labels", " synthetic-trot 0.", "bank: " + filepath.Join(straight, "bank.npz")} {
		if !strings.Contains(out, want) {
			t.Fatalf("train printed %q, missing %q", out, want)
		}
	}
	for _, f := range []string{trainrun.MetricsFile, smodice.DiscFile, smodice.LossesPlot, smodice.ESSPlot, smodice.KLPlot, trainrun.CheckpointFile, "bank.npz"} {
		if _, err := os.Stat(filepath.Join(straight, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}

	split := filepath.Join(dir, "split")
	mustRun(t, append(common, "--out", split, "--iters", "7")...)
	if code, _, stderr := dualforce(append(common, "--out", split, "--iters", "12")...); code != 1 || !strings.Contains(stderr, "--resume") {
		t.Fatalf("second run into a used directory exited %d: %s", code, stderr)
	}
	mustRun(t, append(common, "--out", split, "--iters", "12", "--resume")...)
	want, _ := os.ReadFile(filepath.Join(straight, "bank.npz"))
	got, _ := os.ReadFile(filepath.Join(split, "bank.npz"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatal("resumed run wrote another bank than the straight one")
	}

	exported := filepath.Join(dir, "exported.npz")
	mustRun(t, "export", "--checkpoint", straight, "--out", exported)
	if got, _ := os.ReadFile(exported); !bytes.Equal(got, want) {
		t.Fatal("export of the checkpoint differs from the bank written by train")
	}
	bank, err := skills.ReadBank(exported)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bank.ByName(smodice.ExpertLatentName); err != nil || bank.Contract.Layout.Name != skills.LayoutLocomotion48 {
		t.Fatalf("exported bank: %v, layout %q", err, bank.Contract.Layout.Name)
	}
	if ck, err := smodice.Read(filepath.Join(straight, trainrun.CheckpointFile)); err != nil || !ck.Config.Value.AbsorbingFalls {
		t.Fatalf("default run: %v, absorbing falls %v (want SMODICE's default, absorbing)", err, err == nil && ck.Config.Value.AbsorbingFalls)
	}

	// --absorbing-falls=false (the spec's terminal value), --refresh-rows and --min-ess-share
	// reach the value learner's configuration the run keeps; SMODICE's default refresh is 0,
	// every row, and its default weights the paper's softmax.
	spec := filepath.Join(dir, "spec")
	mustRun(t, append(common, "--out", spec, "--iters", "1", "--absorbing-falls=false", "--refresh-rows", "3000", "--min-ess-share", "0.05")...)
	if ck, err := smodice.Read(filepath.Join(spec, trainrun.CheckpointFile)); err != nil || ck.Config.Value.AbsorbingFalls || ck.Config.Value.RefreshRows != 3000 || ck.Config.Value.MinESSShare != 0.05 {
		t.Fatalf("--absorbing-falls=false --refresh-rows 3000 --min-ess-share 0.05 run: %v, stored %+v", err, ck.Config.Value)
	}
	if ck, err := smodice.Read(filepath.Join(straight, trainrun.CheckpointFile)); err != nil || ck.Config.Value.RefreshRows != 0 || ck.Config.Value.MinESSShare != 0 {
		t.Fatalf("default run: %v, refresh rows %d, ESS share %g (want every row, the softmax)", err, ck.Config.Value.RefreshRows, ck.Config.Value.MinESSShare)
	}
}

// TestTrainJudgesCheckpoints trains with checks through the command line: every periodic and
// the final checkpoint is judged by rollouts in the simulator, and the bank is the export of
// the best-judged checkpoint.
func TestTrainJudgesCheckpoints(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	run := filepath.Join(dir, "run")
	out := mustRun(t, "train", "smodice", "--offline", data, "--out", run, "--disc-steps", "30", "--batch", "64",
		"--iters", "5", "--checkpoint-every", "2", "--check-rollouts", "1", "--quiet")
	t.Log(out)
	checks, err := trainrun.ReadChecks(run)
	if err != nil || len(checks) != 3 || checks[0].Iteration != 2 || checks[2].Iteration != 5 {
		t.Fatalf("checks %+v, %v: want iterations 2, 4 and 5", checks, err)
	}
	best, err := trainrun.Selected(run)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("checks: 3; best iteration %d (return ", best.Iteration); !strings.Contains(out, want) {
		t.Fatalf("train printed %q, missing %q", out, want)
	}
	exported := filepath.Join(dir, "best.npz")
	mustRun(t, "export", "--checkpoint", filepath.Join(run, trainrun.BestCheckpointFile), "--out", exported)
	want, _ := os.ReadFile(exported)
	if got, _ := os.ReadFile(filepath.Join(run, "bank.npz")); len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatal("the run's bank is not the best-judged checkpoint's")
	}
	// Nothing to judge: the discriminator alone, and the bank of iteration 0.
	out = mustRun(t, "train", "smodice", "--offline", data, "--out", filepath.Join(dir, "zero"), "--disc-steps", "30", "--batch", "64",
		"--iters", "0", "--check-rollouts", "1", "--quiet")
	if !strings.Contains(out, "checks: 0, none with a score") || !strings.Contains(out, "iteration 0)") {
		t.Fatalf("a run of no iterations printed %q", out)
	}
	// -1 is the task's number of rollouts (eval.TaskCheckRollouts); below that is refused.
	if code, _, stderr := dualforce("train", "smodice", "--offline", data, "--out", filepath.Join(dir, "neg"), "--check-rollouts", "-2"); code != 2 || !strings.Contains(stderr, "--check-rollouts -2") {
		t.Fatalf("--check-rollouts -2 exited %d: %s", code, stderr)
	}
}

func TestFitBC(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	out := filepath.Join(dir, "bc.npz")
	stdout := mustRun(t, "fit", "bc", "--offline", data, "--mode", "expert", "--out", out, "--steps", "50", "--batch", "128", "--quiet")
	t.Log(stdout)
	bank, err := skills.ReadBank(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bank.ByName(datafiletest.ExpertMode + " fit")
	if err != nil {
		t.Fatal(err)
	}
	if len(bank.ByTags(bc.Tag)) != 1 || bank.Producer != bc.Producer || !strings.Contains(stdout, `"synthetic-trot fit"`) {
		t.Fatalf("bank latent %+v, producer %q", *s.Info, bank.Producer)
	}
	stdout = mustRun(t, "fit", "bc", "--offline", data, "--mode", "expert", "--drop-falls", "--out", filepath.Join(dir, "bc-nf.npz"), "--steps", "50", "--batch", "128", "--quiet")
	if !strings.Contains(stdout, `--drop-falls: 0 episodes of "synthetic-trot" that end in a fall left out`) {
		t.Fatalf("--drop-falls said %q", stdout)
	}
}

func TestTrainingCommandsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	run := filepath.Join(dir, "run")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no method", []string{"train"}, 2, "missing method"},
		{"unknown method", []string{"train", "ppo"}, 2, "unknown training method"},
		{"no out", []string{"train", "smodice", "--offline", data}, 2, "--offline and --out are required"},
		{"zero batch", []string{"train", "smodice", "--offline", data, "--out", run, "--batch", "0"}, 2, "positive batch"},
		{"refresh rows -2", []string{"train", "smodice", "--offline", data, "--out", run, "--refresh-rows", "-2"}, 2, "--refresh-rows -2: want a count >= 0 or -1 (the task's)"},
		{"doi: negative refresh rows", []string{"train", "doi", "--offline", data, "--out", run, "--refresh-rows", "-1"}, 2, "--refresh-rows -1"},
		{"negative ESS share", []string{"train", "smodice", "--offline", data, "--out", run, "--min-ess-share", "-0.1"}, 2, "--min-ess-share -0.1"},
		{"doi: ESS share over 1", []string{"train", "doi", "--offline", data, "--out", run, "--min-ess-share", "1.5"}, 2, "--min-ess-share 1.5"},
		{"ESS share -2", []string{"train", "smodice", "--offline", data, "--out", run, "--min-ess-share", "-2"}, 2, "--min-ess-share -2: want a share in [0, 1] or -1 (the task's)"},
		{"doi: no task's ESS share", []string{"train", "doi", "--offline", data, "--out", run, "--min-ess-share", "-1"}, 2, "--min-ess-share -1: want a share in [0, 1]"},
		{"policy rate -2", []string{"train", "smodice", "--offline", data, "--out", run, "--policy-lr", "-2"}, 2, "--policy-lr -2: want a positive learning rate or -1 (the task's)"},
		{"policy averaging -0.5", []string{"train", "smodice", "--offline", data, "--out", run, "--policy-average", "-0.5"}, 2, "--policy-average -0.5: want a decay in [0, 1) or -1 (the task's)"},
		{"doi: no task's policy rate", []string{"train", "doi", "--offline", data, "--out", run, "--policy-lr", "-1"}, 2, "--policy-lr -1: want a positive learning rate"},
		{"doi: no task's policy averaging", []string{"train", "doi", "--offline", data, "--out", run, "--policy-average", "-1"}, 2, "--policy-average -1: want a decay in [0, 1)"},
		{"missing file", []string{"train", "smodice", "--offline", filepath.Join(dir, "nope.npz"), "--out", run}, 1, "no such file"},
		{"missing expert", []string{"train", "smodice", "--offline", data, "--expert", data + ".none", "--out", run}, 1, "no such file"},
		{"offline file as expert", []string{"train", "smodice", "--offline", data, "--expert", data, "--out", run}, 1, "kind"},
		{"layout is not the task's", []string{"train", "smodice", "--offline", data, "--out", run, "--task", "navigation"}, 1, "does not match the task"},
		{"unknown task", []string{"train", "smodice", "--offline", data, "--out", run, "--task", "swim"}, 1, "unknown task"},
		{"export without checkpoint", []string{"export", "--checkpoint", dir, "--out", filepath.Join(dir, "b.npz")}, 1, "no such file"},
		{"export of a non-checkpoint", []string{"export", "--checkpoint", data, "--out", filepath.Join(dir, "b.npz")}, 1, "bad checkpoint"},
		{"bc of an unknown mode", []string{"fit", "bc", "--offline", data, "--mode", "moonwalk", "--out", filepath.Join(dir, "b.npz")}, 1, "modes: synthetic-trot, random, drift"},
		{"bc for another task", []string{"fit", "bc", "--offline", data, "--task", "navigation", "--out", filepath.Join(dir, "b.npz")}, 1, "does not match the task"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := dualforce(tc.args...)
			t.Log(strings.TrimSpace(stderr))
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(run, trainrun.CheckpointFile)); err == nil {
		t.Fatal("a refused run left a checkpoint")
	}
}

// TestPolicyFlags: without --policy-lr and --policy-average a method's policy keeps its
// defaults; given, they win, --policy-average 0 (the last iterate) included; --policy-tilt
// and --policy-temperature exist where withDraws defines them, a temperature of 1 stored as 0;
// values no learner can use are refused.
func TestPolicyFlags(t *testing.T) {
	def := wbc.DefaultConfig()
	for _, tc := range []struct {
		args        []string
		lr, average float64
		components  int
		tilt, temp  float64
	}{
		{nil, def.LR, def.Average, 0, 0, 0},
		{[]string{"--policy-lr", "5e-4"}, 5e-4, def.Average, 0, 0, 0},
		{[]string{"--policy-average", "0"}, def.LR, 0, 0, 0, 0},
		{[]string{"--policy-average", "0.9", "--policy-lr", "3e-4"}, 3e-4, 0.9, 0, 0, 0},
		{[]string{"--policy-components", "1"}, def.LR, def.Average, 0, 0, 0},
		{[]string{"--policy-components", "3"}, def.LR, def.Average, 3, 0, 0},
		{[]string{"--policy-tilt", "2"}, def.LR, def.Average, 0, 2, 0},
		{[]string{"--policy-temperature", "0.5"}, def.LR, def.Average, 0, 0, 0.5},
		{[]string{"--policy-temperature", "1"}, def.LR, def.Average, 0, 0, 0},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		p := addPolicyFlags(fs, def, false).withDraws(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
		c := wbc.Config{LR: 1, Average: 0.5, Components: 7, Tilt: 9, Temperature: 9}
		p.apply(&c, prep.TaskNavigation)
		if c.LR != tc.lr || c.Average != tc.average || c.Components != tc.components || c.Tilt != tc.tilt || c.Temperature != tc.temp {
			t.Errorf("%v: rate %g, average %g, components %d, tilt %g, temperature %g; want %g, %g, %d, %g, %g",
				tc.args, c.LR, c.Average, c.Components, c.Tilt, c.Temperature, tc.lr, tc.average, tc.components, tc.tilt, tc.temp)
		}
	}
	fit := flag.NewFlagSet("fit", flag.ContinueOnError)
	addPolicyFlags(fit, def, false)
	if fit.Lookup("policy-tilt") != nil || fit.Lookup("policy-temperature") != nil {
		t.Error("--policy-tilt or --policy-temperature defined without withDraws (fit bc draws uniformly)")
	}
	for _, bad := range [][]string{{"--policy-lr", "-1"}, {"--policy-lr", "0"}, {"--policy-lr", "NaN"}, {"--policy-average", "1"}, {"--policy-average", "-0.5"}, {"--policy-lr", "+Inf"}, {"--policy-components", "0"}, {"--policy-components", "17"},
		{"--policy-tilt", "-1"}, {"--policy-tilt", "NaN"}, {"--policy-tilt", "+Inf"},
		{"--policy-temperature", "0"}, {"--policy-temperature", "-1"}, {"--policy-temperature", "NaN"}, {"--policy-temperature", "+Inf"}} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		p := addPolicyFlags(fs, def, false).withDraws(fs)
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		if err := p.check(); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestSMODICEDefaultsByTask: train smodice's weight pass and policy flags default to -1, the
// task's (navigation's cap, blocks, 3e-4 and last iterate; locomotion's softmax, exact pass
// and the learner's own rate and averaging); given values are kept for every task; the other
// methods default to their own values whatever the task.
func TestSMODICEDefaultsByTask(t *testing.T) {
	value := dice.ValueConfig{RefreshRows: 7, MinESSShare: 0.5}
	policy := wbc.DefaultConfig()
	flags := func(byTask bool, args ...string) (*weightPassFlags, *policyFlags) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		pass, pol := addWeightPassFlags(fs, value, byTask), addPolicyFlags(fs, policy, byTask)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := pass.check(); err != nil {
			t.Fatal(err)
		}
		if err := pol.check(); err != nil {
			t.Fatal(err)
		}
		return pass, pol
	}
	type want struct {
		rows               int
		share, lr, average float64
	}
	given := []string{"--refresh-rows", "5", "--min-ess-share", "0.05", "--policy-lr", "2e-4", "--policy-average", "0.5"}
	for _, tc := range []struct {
		name   string
		byTask bool
		args   []string
		task   string
		want   want
	}{
		{"smodice navigation", true, nil, prep.TaskNavigation, want{131072, 0.01, 3e-4, 0}},
		{"smodice locomotion", true, nil, prep.TaskLocomotion, want{0, 0, policy.LR, policy.Average}},
		{"given, navigation", true, given, prep.TaskNavigation, want{5, 0.05, 2e-4, 0.5}},
		{"given, locomotion", true, given, prep.TaskLocomotion, want{5, 0.05, 2e-4, 0.5}},
		{"smodice navigation, rate given", true, []string{"--policy-lr", "1e-3"}, prep.TaskNavigation, want{131072, 0.01, 1e-3, 0}},
		{"doi navigation", false, nil, prep.TaskNavigation, want{7, 0.5, policy.LR, policy.Average}},
	} {
		pass, pol := flags(tc.byTask, tc.args...)
		var v dice.ValueConfig
		var p wbc.Config
		pass.apply(&v, tc.task)
		pol.apply(&p, tc.task)
		if got := (want{v.RefreshRows, v.MinESSShare, p.LR, p.Average}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestSMODICETakesTheTaskDefaults: a train smodice run without the weight pass and policy
// flags keeps its data's task's defaults in its configuration (the registry's locomotion
// defaults changed for the test, so that they differ from every method's). Not parallel: it
// edits the task registry and restores it.
func TestSMODICETakesTheTaskDefaults(t *testing.T) {
	loco := prep.Tasks[prep.TaskLocomotion]
	t.Cleanup(func() { prep.Tasks[prep.TaskLocomotion] = loco })
	changed := loco
	changed.Expert = prep.ExpertDefaults{MinESSShare: 0.02, RefreshRows: 100, PolicyLR: 2e-4, PolicyAverage: 0.5}
	prep.Tasks[prep.TaskLocomotion] = changed

	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	run := filepath.Join(dir, "run")
	mustRun(t, "train", "smodice", "--offline", data, "--disc-steps", "30", "--batch", "64", "--check-rollouts", "0", "--quiet", "--out", run, "--iters", "1")
	ck, err := smodice.Read(filepath.Join(run, trainrun.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	v, p := ck.Config.Value, ck.Config.Policy
	if v.MinESSShare != 0.02 || v.RefreshRows != 100 || p.LR != 2e-4 || p.Average != 0.5 {
		t.Fatalf("default run stored share %v, refresh rows %d, policy rate %v, averaging %v; want the task's 0.02, 100, 2e-4, 0.5",
			v.MinESSShare, v.RefreshRows, p.LR, p.Average)
	}
}
