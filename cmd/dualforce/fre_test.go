package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/fre"
	trainrun "github.com/dualforce/dualforce/trainer/run"
)

// TestTrainFRE pre-trains a tiny encoder through the command line on the
// discriminator of a SMODICE run, and checks that a SMODICE run of other
// data is refused before any training.
func TestTrainFRE(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	run := filepath.Join(dir, "smodice")
	mustRun(t, "train", "smodice", "--offline", data, "--out", run, "--disc-steps", "20", "--iters", "1", "--batch", "64", "--check-rollouts", "0", "--quiet")

	out := filepath.Join(dir, "fre")
	tiny := []string{"train", "fre", "--offline", data, "--smodice", run, "--steps", "4", "--batch", "8", "--latent", "8",
		"--width", "16", "--ffn", "16", "--decoder", "16", "--checkpoint-every", "2", "--lr-decay-from", "1", "--lr-half-life", "1", "--family-weights", "2,1,1,3", "--quiet"}
	stdout := mustRun(t, append(tiny, "--out", out)...)
	t.Log(stdout)
	for _, want := range []string{"step 4, reward scale", "held-out reconstruction, prior's rewards, hand_made", "identification of 200 unseen rewards"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, f := range []string{trainrun.CheckpointFile, trainrun.MetricsFile, fre.LossesPlot, fre.EvalFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	if cfg, _, err := fre.ReadConfig(filepath.Join(out, trainrun.CheckpointFile)); err != nil || cfg.Prior.Weights != [fre.NumFamilies]float64{2, 1, 1, 3} {
		t.Errorf("the run's family weights are %v (%v), want --family-weights 2,1,1,3", cfg.Prior.Weights, err)
	}
	// The rate decays after the first step, halving every step: steps 3 and 4 at 1/2 and 1/4 of 1e-3.
	if log, _ := os.ReadFile(filepath.Join(out, trainrun.MetricsFile)); !strings.Contains(string(log), `"lr":0.0005,`) || !strings.Contains(string(log), `"lr":0.00025,`) {
		t.Errorf("the metrics log does not show the decaying learning rate:\n%s", log)
	}
	if code, _, stderr := dualforce("train", "fre", "--offline", data, "--smodice", run, "--out", filepath.Join(dir, "neg"), "--lr-half-life", "-1"); code == 0 || !strings.Contains(stderr, "half-life -1") {
		t.Fatalf("--lr-half-life -1: exit %d, %s", code, stderr)
	}
	for _, bad := range []string{"1,1,1", "1,1,1,1,1", "1,1,x,1", "1,1,1,-1", "1,1,1,NaN", "1,1,1,Inf", "0,0,0,0"} {
		code, _, stderr := dualforce("train", "fre", "--offline", data, "--smodice", run, "--out", filepath.Join(dir, "neg"), "--steps", "1", "--family-weights", bad)
		if code == 0 || !strings.Contains(stderr, "family weights") && !strings.Contains(stderr, "--family-weights") {
			t.Errorf("--family-weights %s: exit %d, %s", bad, code, stderr)
		}
	}

	// Another dataset of the same layout: its standardisation differs, so
	// the SMODICE run's r_E does not belong to these states.
	off, _ := datafiletest.Datasets(t, datafiletest.Small, 2)
	other := filepath.Join(dir, "other.npz")
	if err := datafile.WriteOffline(other, off); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := dualforce("train", "fre", "--offline", other, "--smodice", run, "--out", filepath.Join(dir, "fre2"), "--steps", "1", "--quiet")
	if code != 1 || !strings.Contains(stderr, "another offline dataset") {
		t.Fatalf("SMODICE run of other data: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "fre2", trainrun.CheckpointFile)); err == nil {
		t.Fatal("a refused run wrote a checkpoint")
	}
	if code, _, stderr := dualforce("train", "fre", "--offline", data, "--out", out); code != 2 || !strings.Contains(stderr, "--smodice") {
		t.Fatalf("missing --smodice: exit %d, %s", code, stderr)
	}
}
