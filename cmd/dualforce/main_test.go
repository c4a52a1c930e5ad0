package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func dualforce(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// collect writes the test-scale locomotion set (into a directory it creates) and dataset inspect
// reads it back, summarises it and draws it.
func TestCollectAndInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	out := filepath.Join(dir, "loco.npz")
	code, stdout, stderr := dualforce("collect", "-task", "locomotion", "-scale", "test", "-seed", "3", "-out", out, "-quiet")
	if code != 0 {
		t.Fatalf("collect exited %d: %s", code, stderr)
	}
	t.Log(stdout)
	if !strings.Contains(stdout, "collected 10000 transitions (2000 expert)") {
		t.Fatalf("collect printed %q", stdout)
	}
	code, stdout, stderr = dualforce("dataset", "inspect", out)
	if code != 0 {
		t.Fatalf("inspect exited %d: %s", code, stderr)
	}
	for _, want := range []string{"offline archive, format v1, seed 3", "expert ", "low_turn_left", "random", "NaN/Inf: none", "base_lin_vel", "loco_summary.png"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "loco_summary.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = dualforce("dataset", "inspect", filepath.Join(dir, "loco_expert.npz"))
	if code != 0 || !strings.Contains(stdout, "expert archive") || !strings.Contains(stdout, "2000 states") {
		t.Fatalf("inspect of the expert archive exited %d: %s%s", code, stdout, stderr)
	}

	// A damaged archive is reported, not summarised.
	if err := os.WriteFile(out, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = dualforce("dataset", "inspect", out)
	if code != 1 || !strings.Contains(stderr, "invalid dataset file") {
		t.Fatalf("inspect of a damaged archive exited %d: %s", code, stderr)
	}
}

// An interrupted command exits with the shell's status for SIGINT, says so, and writes nothing.
func TestInterruptedCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "loco.npz")
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"collect", "-task", "locomotion", "-scale", "test", "-out", out, "-quiet"}, &stdout, &stderr)
	if code != exitInterrupted || stderr.String() != "dualforce collect: interrupted\n" {
		t.Fatalf("exit %d, stderr %q; want %d and the word interrupted", code, stderr.String(), exitInterrupted)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an interrupted collect left %s behind (%v)", out, err)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{nil, 2, "Commands:"},
		{[]string{"help"}, 0, "collect"},
		{[]string{"fly"}, 2, `unknown command "fly"`},
		{[]string{"collect", "-h"}, 0, "Usage: dualforce collect"},
		{[]string{"collect", "-task", "swim"}, 2, `task "swim"`},
		{[]string{"collect", "-scale", "huge"}, 2, `scale "huge"`},
		{[]string{"collect", "-workers", "0"}, 2, "want at least 1"},
		{[]string{"collect", "-action-scale", "0"}, 2, "action scale 0: want (0, 2] rad"},
		{[]string{"collect", "-action-scale", "2.5"}, 2, "action scale 2.5"},
		{[]string{"collect", "extra"}, 2, "unexpected arguments"},
		{[]string{"collect", "-bogus"}, 2, "flag provided but not defined"},
		{[]string{"collect", "-world", "moon", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, `no built-in world "moon"`},
		{[]string{"collect", "-task", "navigation", "-other-side-fence", "2", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, "other-side fence share 2: want [0, 1]"},
		{[]string{"collect", "-other-side-fence", "0.5", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, "other-side fences need a navigation world"},
		{[]string{"collect", "-task", "navigation", "-turn-back", "-1", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, "turn-back share -1: want [0, 1]"},
		{[]string{"collect", "-turn-back", "0.5", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, "turning back needs a navigation world"},
		{[]string{"collect", "-task", "navigation", "-fence-on-route", "-out", filepath.Join(t.TempDir(), "x.npz")}, 1, "fences on the route need a share of fenced episodes"},
		{[]string{"dataset"}, 2, "missing subcommand"},
		{[]string{"dataset", "shred"}, 2, `unknown dataset subcommand "shred"`},
		{[]string{"dataset", "inspect"}, 2, "want 1 argument(s) after the flags, got 0"},
		{[]string{"dataset", "inspect", "-h"}, 0, "Usage: dualforce dataset inspect"},
		{[]string{"dataset", "inspect", "/nonexistent/x.npz"}, 1, "no such file"},
	}
	for _, tc := range tests {
		code, stdout, stderr := dualforce(tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("dualforce %q exited %d, output %q; want %d and %q", tc.args, code, stdout+stderr, tc.code, tc.want)
		}
	}
}

// Every command that writes checks its outputs before the work starts: an output that cannot be
// written (here, under a regular file, or a directory where a file is wanted) is refused at
// once, before any input is read or any collection or training starts, and nothing is created.
func TestOutputsAreCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "sub", "out.npz")
	missing := filepath.Join(dir, "missing.npz")
	for _, args := range [][]string{
		{"collect", "-task", "navigation", "-scale", "paper", "-out", bad},
		{"fit", "bc", "-offline", missing, "-out", bad},
		{"export", "-checkpoint", missing, "-out", bad},
		{"train", "smodice", "-offline", missing, "-out", filepath.Join(blocker, "run")},
		{"train", "smodice", "-offline", missing, "-out", filepath.Join(dir, "run"), "-bank", bad},
		{"eval", "-bank", missing, "-task", "locomotion", "-out", filepath.Join(blocker, "eval")},
		{"eval", "-bank", missing, "-task", "locomotion", "-out", filepath.Join(dir, "eval"), "-write-bank", bad},
		{"collect", "-out", dir},
		{"eval", "-bank", missing, "-task", "locomotion", "-out", filepath.Join(dir, "new", "eval"), "-write-bank", dir},
	} {
		code, stdout, stderr := dualforce(args...)
		if code != 1 || !strings.Contains(stderr, "cannot write output") {
			t.Errorf("dualforce %q exited %d: %s%s; want 1 and an output error", args, code, stdout, stderr)
		}
	}
	// A refusal for a bad input leaves no directory behind; it is made at the write.
	code, _, stderr := dualforce("eval", "-bank", missing, "-task", "locomotion", "-out", filepath.Join(dir, "later", "eval"))
	if code != 1 || !strings.Contains(stderr, "no such file") {
		t.Fatalf("eval of a missing bank exited %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "later")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused eval left its output directory: %v", err)
	}
}

// The first interrupt cancels the command's context and leaves the process running (a trainer
// writes its checkpoint); a second one ends it at once. The test runs itself as the process.
func TestSecondInterruptQuits(t *testing.T) {
	if os.Getenv("DUALFORCE_SIGNAL_CHILD") == "1" {
		ctx, stop := interruptContext(os.Stderr)
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("cancelled")
		time.Sleep(time.Minute) // a wind-down that does not look at the context
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSecondInterruptQuits$")
	child.Env = append(os.Environ(), "DUALFORCE_SIGNAL_CHILD=1")
	var stderr bytes.Buffer
	child.Stderr = &stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	if err := child.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	expect("cancelled")
	if err := child.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = child.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("child ended with %v (timeout: %v), want killed by the second interrupt", err, ctx.Err())
	}
	if status, ok := exit.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGINT {
		t.Fatalf("child ended with %v, want killed by SIGINT", err)
	}
	if !strings.Contains(stderr.String(), "interrupt again to quit at once") {
		t.Errorf("child's stderr %q does not say a second interrupt quits", stderr.String())
	}
}

// Each trainer says what it reads before the minute or two a paper-scale set takes, unless
// --quiet; a set that is not there shows the order: the announcement, then the error.
func TestTrainersAnnounceReading(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.npz")
	runs := map[string][]string{
		"smodice":   {"train", "smodice", "--offline", missing, "--out", filepath.Join(dir, "s")},
		"doi":       {"train", "doi", "--offline", missing, "--out", filepath.Join(dir, "d")},
		"fre":       {"train", "fre", "--offline", missing, "--smodice", dir, "--out", filepath.Join(dir, "f")},
		"dualforce": {"train", "dualforce", "--offline", missing, "--smodice", dir, "--fre", dir, "--out", filepath.Join(dir, "df")},
	}
	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := dualforce(args...)
			if code != 1 || !strings.HasPrefix(stderr, "reading "+missing+" and preparing the run") || !strings.Contains(stderr, "no such file") {
				t.Errorf("exit %d, stderr %q; want the announcement, then the missing file", code, stderr)
			}
			code, _, stderr = dualforce(append(args, "--quiet")...)
			if code != 1 || strings.Contains(stderr, "reading ") {
				t.Errorf("with --quiet: exit %d, stderr %q; want the error alone", code, stderr)
			}
		})
	}
}
