package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommand(t *testing.T) {
	run := filepath.Join(t.TempDir(), "smodice-run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	log := "{\"iteration\":1,\"value_loss\":2,\"ess\":100}\n{\"iteration\":2,\"value_loss\":1.5,\"ess\":90}\n"
	if err := os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, stderr := dualforce("report", "-out", out, run)
	if code != 0 || !strings.Contains(stdout, "wrote "+out+" (1 runs)") {
		t.Fatalf("report exited %d: %s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "Run smodice-run") || !strings.Contains(string(page), "data:image/png;base64,") {
		t.Fatalf("the page lacks the run or its figure:\n%.500s", page)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "want at least one argument"},
		{[]string{"report", "-h"}, 0, "Usage: dualforce report"},
		{[]string{"report", "-out", out, t.TempDir()}, 1, "nothing to report"},
		{[]string{"report", "-out", out, "/nonexistent/run"}, 1, "no such file"},
	} {
		code, stdout, stderr := dualforce(tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("dualforce %q exited %d, output %q; want %d and %q", tc.args, code, stdout+stderr, tc.code, tc.want)
		}
	}
}

// eval --fences on a navigation bank, then report on its output: the page holds the fence table
// and the top-down paths eval kept.
func TestEvalFencesThenReport(t *testing.T) {
	dir := t.TempDir()
	bankPath := writeStandingNavigationBank(t, dir)
	run := filepath.Join(dir, "navrun")
	code, stdout, stderr := dualforce("eval", "--bank", bankPath, "--task", "navigation", "--rollouts", "1", "--seconds", "0.5",
		"--fences", "--paths", "1", "--out", filepath.Join(run, "eval"), "--quiet")
	if code != 0 {
		t.Fatalf("eval exited %d: %s", code, stderr)
	}
	t.Log(stdout)
	for _, want := range []string{"goal rate per world (1 rollouts each)", "obstacle_fence_left", "obstacle_fenced: 25 policy steps"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("eval output lacks %q", want)
		}
	}
	out := filepath.Join(dir, "report.html")
	if code, stdout, stderr = dualforce("report", "--out", out, run); code != 0 {
		t.Fatalf("report exited %d: %s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fence robustness", "obstacle_fence_right", "Top-down base paths per skill", "no filter applied"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if code, _, stderr = dualforce("eval", "--bank", bankPath, "--task", "locomotion", "--fences"); code != 2 || !strings.Contains(stderr, "--fences is the navigation") {
		t.Errorf("--fences with locomotion exited %d: %s", code, stderr)
	}
}
