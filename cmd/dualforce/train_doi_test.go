package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

// train doi through the command line on the synthetic task: a bank of three skills, and the
// report of the run plots its metrics.
func TestTrainDOI(t *testing.T) {
	dir := t.TempDir()
	data := writeSynthetic(t, dir)
	run := filepath.Join(dir, "doi")
	out := mustRun(t, "train", "doi", "--offline", data, "--out", run, "--disc-steps", "30", "--batch", "64", "--iters", "6",
		"--checkpoint-every", "3", "--disdain", "0.5", "--ensemble", "2", "--policy-tilt", "1", "--quiet")
	t.Log(out)
	for _, want := range []string{"iteration 6: H(q)", "bank: " + filepath.Join(run, "bank.npz") + " (3 skills)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("train doi printed %q, missing %q", out, want)
		}
	}
	bank, err := skills.ReadBank(filepath.Join(run, "bank.npz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bank.Slots) != 3 || bank.Latents[0].Info.Name != "doi-skill0" {
		t.Fatalf("bank: %d slots, latents %+v", len(bank.Slots), bank.Latents)
	}
	page := filepath.Join(dir, "report.html")
	mustRun(t, "report", "--out", page, run)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "Training metrics: metrics.jsonl") {
		t.Fatal("the report of a DOI run has no metrics figure")
	}
	// Resumed to 8 iterations, the run writes the bank an uninterrupted run of 8 writes (its
	// policies' draws tilted, which must survive the resume).
	flags := []string{"--offline", data, "--disc-steps", "30", "--batch", "64", "--iters", "8", "--checkpoint-every", "3", "--disdain", "0.5", "--ensemble", "2", "--policy-tilt", "1", "--quiet"}
	straight := filepath.Join(dir, "doi8")
	mustRun(t, append([]string{"train", "doi", "--out", straight}, flags...)...)
	out = mustRun(t, append([]string{"train", "doi", "--out", run, "--resume"}, flags...)...)
	if !strings.Contains(out, "iteration 8: H(q)") {
		t.Fatalf("train doi --resume printed %q", out)
	}
	a, errA := os.ReadFile(filepath.Join(straight, "bank.npz"))
	b, errB := os.ReadFile(filepath.Join(run, "bank.npz"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("the resumed run's bank differs from the uninterrupted run's (%v, %v)", errA, errB)
	}
	// Imitating a SMODICE-expert run on the same data.
	smodiceRun := filepath.Join(dir, "smodice")
	mustRun(t, "train", "smodice", "--offline", data, "--out", smodiceRun, "--disc-steps", "30", "--batch", "64", "--iters", "3", "--check-rollouts", "0", "--quiet")
	out = mustRun(t, "train", "doi", "--offline", data, "--out", filepath.Join(dir, "doi-on-smodice"), "--smodice", smodiceRun,
		"--batch", "64", "--iters", "3", "--quiet")
	if !strings.Contains(out, "(3 skills)") {
		t.Fatalf("train doi --smodice printed %q", out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"train", "doi", "--offline", data, "--out", filepath.Join(dir, "one"), "--skills", "1"}, 2, "a discriminator needs two"},
		{[]string{"train", "doi", "--offline", data, "--out", run, "--disc-steps", "1", "--iters", "1"}, 1, "pass --resume"},
		{append([]string{"train", "doi", "--out", run, "--resume", "--seed", "2"}, flags...), 1, "configuration differs"},
		{[]string{"train", "doi", "--out", run}, 2, "--offline and --out are required"},
		{[]string{"train", "doi", "--offline", data, "--out", filepath.Join(dir, "x"), "--smodice", dir}, 1, "checkpoint"},
	} {
		code, stdout, stderr := dualforce(tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("dualforce %q exited %d, output %q; want %d and %q", tc.args, code, stdout+stderr, tc.code, tc.want)
		}
	}
}
