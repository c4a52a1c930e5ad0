//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/recorder"
	"github.com/dualforce/dualforce/runtime/replay"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// qemuARM64 is Debian's qemu-user-static runner for linux/arm64 binaries.
const qemuARM64 = "qemu-aarch64-static"

// TestArm64ReplaysAnAmd64Recording builds the on-robot binary for linux/arm64 (CGO_ENABLED=0, as
// it ships), records a run of the runtime on this amd64 machine with a policy of a real
// policy's size, and replays the recording with the arm64 skillrt under qemu-user. The amd64
// replay is byte for byte; the arm64 one sums the policy's float32 products in another order (a
// Go loop with fused multiply-adds instead of vek's AVX2 kernels), so its commands may differ in
// their last wire steps: replay must call that float rounding, exit 0, and name the largest
// difference. A different bank under qemu must still be called a logic divergence.
func TestArm64ReplaysAnAmd64Recording(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the recording must come from amd64 (this is %s)", runtime.GOARCH)
	}
	qemu, err := exec.LookPath(qemuARM64)
	if err != nil {
		t.Skipf("%s not installed (Debian package qemu-user-static; make setup installs it): %v", qemuARM64, err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH to build the arm64 binary: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "skillrt-arm64")
	build := exec.Command(goTool, "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the linux/arm64 skillrt: %v\n%s", err, out)
	}

	bankPath := filepath.Join(dir, "random.npz")
	if err := skills.WriteBank(bankPath, skillstest.Random(t, skillstest.Locomotion(t), 18, 256, 256)); err != nil {
		t.Fatal(err)
	}
	files := recordRun(t, bankPath, filepath.Join(dir, "rec"), 2*time.Second)

	native, err := replay.Run(files, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if native.Divergence != nil || native.Identical != native.Compared {
		t.Fatalf("amd64 replay of an amd64 recording is not byte for byte: %d of %d identical, %v", native.Identical, native.Compared, native.Divergence)
	}
	t.Logf("amd64 replay: %d ticks, %d commands identical byte for byte", native.Ticks, native.Compared)

	out, code := runQemu(t, qemu, bin, append([]string{"replay"}, files...)...)
	t.Logf("arm64 skillrt replay under qemu (exit %d):\n%s", code, out)
	if code != 0 || !regexp.MustCompile(`^replayed \d+ ticks: (no logic divergence|\d+ commands identical byte for byte)`).MatchString(out) {
		t.Fatalf("arm64 replay: exit %d, want 0 and identical or within float tolerance", code)
	}
	if m := regexp.MustCompile(`^replayed (\d+) ticks`).FindStringSubmatch(out); m == nil || m[1] != strconv.FormatUint(native.Ticks, 10) {
		t.Fatalf("arm64 replay covered other ticks than amd64's %d", native.Ticks)
	}

	// The same recording against another policy: a logic divergence, even with the tolerance.
	other := filepath.Join(dir, "other.npz")
	if err := skills.WriteBank(other, skillstest.Random(t, skillstest.Locomotion(t), 19, 256, 256)); err != nil {
		t.Fatal(err)
	}
	out, code = runQemu(t, qemu, bin, append([]string{"replay", "--bank", other}, files...)...)
	if code != 1 || !strings.HasPrefix(out, "LOGIC DIVERGENCE at tick ") {
		t.Fatalf("arm64 replay with another bank: exit %d, want 1 and a logic divergence:\n%s", code, out)
	}
	t.Logf("with another bank: %s", strings.SplitN(out, "\n", 2)[0])
}

// runQemu runs the arm64 binary under qemu-user with args and returns its stdout and stderr and
// exit status.
func runQemu(t *testing.T, qemu, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, append([]string{bin}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("%s %s: %v\n%s", qemu, bin, err, out.String())
	return "", -1
}

// freeLoopbackAddr is a TCP address on loopback that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// recordRun runs the runtime as deployed (app.Start, the flight recorder) on the bank at bankPath
// in lockstep with an emulated master board, paced to the wall clock without real-time priority:
// it stands the robot up, runs the skill for the given time, and returns the recording's files.
func recordRun(t *testing.T, bankPath, recDir string, running time.Duration) []string {
	t.Helper()
	b := boardtest.FirstOrder(t, board.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := config.Default()
	cfg.RobotID, cfg.Bank = "solo-arm64", bankPath
	cfg.Transport = config.Transport{Kind: config.TransportPipe}
	cfg.Calibration.Mode = config.CalibrationOffsets
	cfg.Slider.Enabled = false
	cfg.MQTT.Listen = freeLoopbackAddr(t)
	cfg.Metrics.Listen, cfg.Recorder.Dir = "", recDir
	rt, err := app.Start(ctx, cfg, app.Options{Board: b, AutoRun: true})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- rt.Run(ctx) }()
	c := rt.Core()
	deadline := time.Now().Add(15 * time.Second)
	for c.Phase() != core.PhaseRun {
		if time.Now().After(deadline) || c.Fault() != "" {
			t.Fatalf("not running within 15 s (phase %v, fault %q)", c.Phase(), c.Fault())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(running)
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	files, err := recorder.Recordings(recDir, "")
	if err != nil || len(files) == 0 {
		t.Fatalf("recordings in %s: %v %v", recDir, files, err)
	}
	return files
}
