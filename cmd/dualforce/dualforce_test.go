package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	dfloop "github.com/dualforce/dualforce/trainer/dualforce"
	"github.com/dualforce/dualforce/trainer/fre"
	trainrun "github.com/dualforce/dualforce/trainer/run"
)

// tinyFRE are train fre's flags for a test-scale encoder.
var tinyFRE = []string{"--steps", "2", "--batch", "8", "--latent", "8", "--width", "16", "--ffn", "16", "--decoder", "16", "--quiet"}

// TestTrainDualForce runs the whole chain through the command line at test
// scale (SMODICE for r_E, FRE for the encoder, Dual-Force) and reads the
// bank back; an FRE run of another dataset is refused before the run
// directory is made.
func TestTrainDualForce(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	smodiceRun, freRun := filepath.Join(dir, "smodice"), filepath.Join(dir, "fre")
	// --policy-tilt here and in the Dual-Force run below: each method must hand its learners
	// the reward to tilt by, or their first SetWeights fails.
	mustRun(t, "train", "smodice", "--offline", data, "--out", smodiceRun, "--disc-steps", "20", "--iters", "1", "--batch", "64", "--check-rollouts", "0", "--policy-tilt", "1", "--quiet")
	mustRun(t, append([]string{"train", "fre", "--offline", data, "--smodice", smodiceRun, "--out", freRun}, tinyFRE...)...)

	out := filepath.Join(dir, "dualforce")
	tiny := []string{"train", "dualforce", "--offline", data, "--smodice", smodiceRun, "--fre", freRun,
		"--iters", "3", "--value-steps", "1", "--policy-steps", "1", "--batch", "64", "--hidden", "16", "--subsets", "2", "--checkpoint-every", "2", "--check-rollouts", "1", "--policy-tilt", "1", "--policy-temperature", "0.5", "--quiet"}
	stdout := mustRun(t, append(tiny, "--out", out)...)
	t.Log(stdout)
	if !strings.Contains(stdout, "l0 6, eps 4, latents of 8 values") {
		t.Errorf("output lacks the task's l0 and eps and the FRE's latent width")
	}
	for _, f := range []string{trainrun.CheckpointFile, trainrun.MetricsFile, dfloop.TrainingPlot, dfloop.WeightsPlot} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	// The bank takes each skill from its best-judged checkpoint, with the latents met up to it.
	checkBank := func(checks int) {
		t.Helper()
		judged, err := trainrun.ReadChecks(out)
		if err != nil || len(judged) != checks {
			t.Fatalf("%d checks (%v), want %d", len(judged), err, checks)
		}
		latents := 0
		for i := range 3 {
			best, err := trainrun.SelectedPart(out, i)
			if err != nil {
				t.Fatal(err)
			}
			latents += best.Iteration
		}
		bank, err := skills.ReadBank(filepath.Join(out, "bank.npz"))
		if err != nil {
			t.Fatal(err)
		}
		if len(bank.Slots) != 3 || len(bank.Latents) != latents || bank.LatentDim != 8 || bank.FRE == nil {
			t.Fatalf("bank of %d slots, %d latents of %d values, FRE %v: want 3 slots, %d latents of 8, an FRE",
				len(bank.Slots), len(bank.Latents), bank.LatentDim, bank.FRE != nil, latents)
		}
	}
	if !strings.Contains(stdout, "checks: 2; best iteration") || !strings.Contains(stdout, "of 3 latents over 1 rollouts") || !strings.Contains(stdout, "each skill's best iteration (score): ") {
		t.Errorf("output does not say which judged checkpoints the bank takes")
	}
	checkBank(2)
	if code, _, stderr := dualforce(append(tiny, "--out", out)...); code != 1 || !strings.Contains(stderr, "--resume") {
		t.Errorf("a second run into the same directory: exit %d, %s", code, stderr)
	}
	mustRun(t, append(tiny, "--out", out, "--resume", "--iters", "5")...)
	checkBank(4)

	// --features replaces the task's phi; the FRE run keeps its own (its states are
	// rebuilt with phi onto its fields), an FRE run with --features too; a resume with
	// other features, and a field the layout lacks, are refused.
	features := []string{skills.FieldBaseAngVel, skills.FieldJointPos}
	ownPhi, freOwnPhi := filepath.Join(dir, "own-phi"), filepath.Join(dir, "fre-own-phi")
	mustRun(t, slices.Concat([]string{"train", "fre", "--offline", data, "--smodice", smodiceRun, "--out", freOwnPhi, "--features", strings.Join(features, ",")}, tinyFRE)...)
	if _, c, err := fre.ReadConfig(filepath.Join(freOwnPhi, trainrun.CheckpointFile)); err != nil || !slices.Equal(c.Features.Fields, features) {
		t.Fatalf("train fre --features: the run's states carry phi onto %q (%v), want %q", c.Features.Fields, err, features)
	}
	for _, c := range []struct{ name, fre string }{{"FRE of the task's phi", freRun}, {"FRE of the same phi", freOwnPhi}} {
		mustRun(t, slices.Concat(tiny, []string{"--fre", c.fre, "--out", ownPhi, "--iters", "1", "--check-rollouts", "0", "--features", strings.Join(features, ",")})...)
		bank, err := skills.ReadBank(filepath.Join(ownPhi, "bank.npz"))
		if err != nil {
			t.Fatal(err)
		}
		if got := bank.Contract.Features; !slices.Equal(got.Fields, features) || len(bank.Latents[0].Info.OfflinePsi) != 3+skills.NumJoints {
			t.Errorf("%s: the bank's phi projects onto %q, psi of %d values; want %q, %d", c.name, got.Fields, len(bank.Latents[0].Info.OfflinePsi), features, 3+skills.NumJoints)
		}
		if err := os.RemoveAll(ownPhi); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := dualforce(slices.Concat(tiny, []string{"--out", out, "--resume", "--iters", "6", "--features", strings.Join(features, ",")})...); code != 1 || !strings.Contains(stderr, "phi projects onto") {
		t.Errorf("a resume with other features: exit %d, %s", code, stderr)
	}
	if code, _, stderr := dualforce(slices.Concat(tiny, []string{"--out", ownPhi, "--features", "joint_pos,height_map"})...); code != 1 || !strings.Contains(stderr, `"height_map" is not in layout`) {
		t.Errorf("--features onto a field the layout lacks: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(ownPhi); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run directory was made (%v) before --features was refused", err)
	}

	// The same chain on another dataset of the same layout: its FRE run
	// does not belong to the first dataset.
	other := writeSyntheticAt(t, filepath.Join(dir, "other.npz"), 2)
	otherSMODICE, otherFRE := filepath.Join(dir, "smodice2"), filepath.Join(dir, "fre2")
	mustRun(t, "train", "smodice", "--offline", other, "--out", otherSMODICE, "--disc-steps", "20", "--iters", "1", "--batch", "64", "--check-rollouts", "0", "--quiet")
	mustRun(t, append([]string{"train", "fre", "--offline", other, "--smodice", otherSMODICE, "--out", otherFRE}, tinyFRE...)...)
	refused := filepath.Join(dir, "refused")
	for _, c := range []struct{ name, smodice, fre, want string }{
		{"FRE of other data", smodiceRun, otherFRE, "FRE run does not fit"},
		{"SMODICE of other data", otherSMODICE, freRun, "another offline dataset"},
	} {
		code, _, stderr := dualforce(slices.Concat(tiny, []string{"--smodice", c.smodice, "--fre", c.fre, "--out", refused})...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
		if _, err := os.Stat(refused); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the run directory was made (%v) before the input was refused", c.name, err)
		}
	}
	if code, _, stderr := dualforce("train", "dualforce", "--offline", data, "--smodice", smodiceRun, "--out", out); code != 2 || !strings.Contains(stderr, "--fre") {
		t.Errorf("missing --fre: exit %d, %s", code, stderr)
	}

	// --absorbing-falls=false (the default is absorbing), --beta-clip, --min-ess-share and
	// the rehearsal flags reach the configuration the run keeps (and compares on --resume); a
	// negative clip, a share over 1 and an empty rehearsal sample are refused.
	ours := filepath.Join(dir, "ours")
	mustRun(t, slices.Concat(tiny, []string{"--out", ours, "--iters", "1", "--absorbing-falls=false", "--beta-clip", "2",
		"--min-ess-share", "0.01", "--rehearsal-steps", "3", "--rehearsal-rows", "50", "--rehearsal-keep", "7"})...)
	ck, err := checkpoint.Read(filepath.Join(ours, trainrun.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var saved trainrun.SavedConfig
	var cfg dfloop.TrainConfig
	if err := json.Unmarshal(ck.Config, &saved); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(saved.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Value.AbsorbingFalls || cfg.Loop.BetaClip != 2 || cfg.Value.MinESSShare != 0.01 {
		t.Errorf("stored config: absorbing falls %v, beta clip %g, ESS share %g; want false, 2 and 0.01", cfg.Value.AbsorbingFalls, cfg.Loop.BetaClip, cfg.Value.MinESSShare)
	}
	if l := cfg.Loop; l.RehearsalSteps != 3 || l.RehearsalRows != 50 || l.RehearsalKeep != 7 {
		t.Errorf("stored config: rehearsal steps %d, rows %d, keep %d; want 3, 50 and 7", l.RehearsalSteps, l.RehearsalRows, l.RehearsalKeep)
	}
	if code, _, stderr := dualforce(slices.Concat(tiny, []string{"--out", refused, "--beta-clip", "-1"})...); code != 2 || !strings.Contains(stderr, "--beta-clip") {
		t.Errorf("--beta-clip -1: exit %d, %s", code, stderr)
	}
	if code, _, stderr := dualforce(slices.Concat(tiny, []string{"--out", refused, "--min-ess-share", "2"})...); code != 2 || !strings.Contains(stderr, "--min-ess-share 2") {
		t.Errorf("--min-ess-share 2: exit %d, %s", code, stderr)
	}
	// Without rehearsal steps the run keeps no rehearsal sizes: its configuration is that of
	// runs from before rehearsal, which therefore resume.
	noRehearsal := filepath.Join(dir, "no-rehearsal")
	mustRun(t, slices.Concat(tiny, []string{"--out", noRehearsal, "--iters", "1", "--rehearsal-steps", "0"})...)
	if ck, err = checkpoint.Read(filepath.Join(noRehearsal, trainrun.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ck.Config, &saved); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(saved.Config, []byte("rehearsal")) {
		t.Errorf("--rehearsal-steps 0: the stored configuration names rehearsal: %s", saved.Config)
	}
	if code, _, stderr := dualforce(slices.Concat(tiny, []string{"--out", refused, "--rehearsal-rows", "0"})...); code != 2 || !strings.Contains(stderr, "--rehearsal-rows") {
		t.Errorf("--rehearsal-rows 0: exit %d, %s", code, stderr)
	}
}
