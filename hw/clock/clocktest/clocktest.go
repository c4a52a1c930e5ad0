//go:build linux

// Package clocktest keeps the machine's CPUs awake (hw/clock.KeepAwake) while a real-time test
// runs, in a child process: the test binary itself, started again by KeepAwake and turned into
// the spinner by Main, which the test package's TestMain calls.
package clocktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/dualforce/dualforce/hw/clock"
)

// Off is the environment variable that, set to 0, leaves the CPUs to idle (to measure what a
// machine does without help).
const Off = "DUALFORCE_KEEP_AWAKE"

// childEnv marks the child process KeepAwake starts.
const childEnv = "DUALFORCE_CLOCKTEST_SPINNER"

// Main runs the package's tests, or, in the child process KeepAwake starts, keeps every CPU
// awake until that process is told to stop. Call it from TestMain.
func Main(m *testing.M) {
	if os.Getenv(childEnv) != "1" {
		os.Exit(m.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := clock.KeepAwake(ctx, nil); err != nil {
		fmt.Fprintln(os.Stderr, "clocktest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// KeepAwake keeps every CPU awake until the test ends, unless DUALFORCE_KEEP_AWAKE=0. Call it
// before the test raises any thread to real-time priority (a child inherits its parent's
// scheduling policy); the package's TestMain must call Main.
func KeepAwake(t testing.TB) {
	t.Helper()
	if os.Getenv(Off) == "0" {
		t.Logf("CPUs left to idle (%s=0)", Off)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	// Should the test binary die without its cleanups, the spinner goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("clocktest: start the spinner: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	t.Logf("CPUs kept awake by process %d (hw/clock.KeepAwake; %s=0 turns it off)", cmd.Process.Pid, Off)
}

// Attempts runs a real-time test up to n times, each run a subtest "attemptN", for machines
// that now and then stall a real-time thread past what the system under test must absorb (a
// shared virtual machine stops a vCPU for tens of milliseconds): such a run says nothing about
// the code. A run that met a stall calls stalled with what it saw, which skips its subtest;
// Attempts returns after the first run that did not, and fails t when every run did.
func Attempts(t *testing.T, n int, run func(t *testing.T, stalled func(format string, args ...any))) {
	t.Helper()
	for attempt := 1; attempt <= n; attempt++ {
		met := false
		t.Run(fmt.Sprintf("attempt%d", attempt), func(t *testing.T) {
			run(t, func(format string, args ...any) {
				t.Helper()
				met = true
				t.Skipf("stalled: "+format, args...)
			})
		})
		if !met {
			return
		}
	}
	t.Fatalf("all %d runs met a stall of the machine (the skipped attempts say what they saw): none judged the code", n)
}
