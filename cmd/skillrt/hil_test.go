//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/clock/clocktest"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// TestMain lets clocktest.KeepAwake start this test binary as its CPU spinner.
func TestMain(m *testing.M) { clocktest.Main(m) }

// realtimeSeconds is how long the run lasts: 10 s in the suite, longer with
// DUALFORCE_REALTIME_SECONDS (make bench runs 60).
func realtimeSeconds(t *testing.T) time.Duration {
	if v := os.Getenv("DUALFORCE_REALTIME_SECONDS"); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil || s <= 0 {
			t.Fatalf("DUALFORCE_REALTIME_SECONDS=%q: want a positive number of seconds", v)
		}
		return time.Duration(s) * time.Second
	}
	return 10 * time.Second
}

// TestRuntimeRealtimeOverEthernet runs the runtime as deployed — app.Start with its real-time
// driver, host session, embedded broker — on one end of a veth pair between two fresh network
// namespaces, over raw AF_PACKET sockets, against the simulated Solo12 in real time (MuJoCo at
// the cards' 10 kHz PD) on the other end: stand up, then run a skill that holds the pose. On a
// shared virtual machine the host now and then stops one side for tens of milliseconds: the
// simulator (its longest gap between ticks 7-31 ms in quiet 10 s runs here), or the control
// loop, after which the board's 20 ms command watchdog disables the motors. Either way the
// runtime rightly latches link_timeout, and the run is made again (three runs at most).
func TestRuntimeRealtimeOverEthernet(t *testing.T) {
	clocktest.KeepAwake(t) // first, before the simulator and the runtime raise their threads
	clocktest.Attempts(t, 3, runRealtimeOverEthernet)
}

// runRealtimeOverEthernet is one run of TestRuntimeRealtimeOverEthernet.
func runRealtimeOverEthernet(t *testing.T, stalled func(format string, args ...any)) {
	a, b := linktest.VethPair(t)
	boardConn, hostConn := a.OpenEthernet(t), b.OpenEthernet(t)

	robot, err := robotboard.New(robotboard.Config{Substeps: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer robot.Close()
	srv, err := robot.Serve(boardConn, robotboard.ServeOptions{MAC: boardConn.LocalMAC(), Priority: 40})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(ctx) }()

	dir := t.TempDir()
	bankPath := filepath.Join(dir, "hold.npz")
	if err := skills.WriteBank(bankPath, skillstest.Constant(t, skillstest.Locomotion(t), [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RobotID, cfg.Bank = "solo-hil", bankPath
	cfg.Transport = config.Transport{Kind: config.TransportEthernet, Iface: b.Interface()}
	cfg.Calibration.Mode = config.CalibrationOffsets
	cfg.Calibration.Offsets = robot.JointOffsets()
	cfg.Slider.Enabled = false
	cfg.MQTT.Listen = freeLoopbackAddr(t)
	cfg.Metrics.Listen, cfg.Recorder.Dir = "", ""
	// The longest link timeout the config allows (the ODRI SDK's own): a robot's computer keeps
	// the 20 ms default, but here the simulator alone stalls for 20-30 ms in about one run of
	// six.
	cfg.Limits.LinkTimeout = 50 * time.Millisecond
	// The control loop keeps the last CPU; the simulator (above it in priority) and everything
	// else of ours go where the kernel puts them, which is the other CPU whenever the loop runs.
	opts := app.Options{Link: hostConn, AutoRun: true, RealtimePriority: 30}
	if n := runtime.NumCPU(); n > 1 {
		opts.ControlCPUs = []int{n - 1}
	}
	rt, err := app.Start(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	runFor := realtimeSeconds(t)
	runCtx, stop := context.WithTimeout(ctx, runFor)
	defer stop()
	runDone := make(chan error, 1)
	go func() { runDone <- rt.Run(runCtx) }()

	c := rt.Core()
	minH, maxH, fell := 1.0, 0.0, false
	for runCtx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		if c.Phase() == core.PhaseRun {
			truth := srv.Status().Truth
			minH, maxH = min(minH, truth.Pos[2]), max(maxH, truth.Pos[2])
			fell = fell || truth.Fell
		}
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	cancel()
	<-srvDone

	tm := rt.Timing()
	st := srv.Stats()
	t.Logf("runtime over AF_PACKET for %v: %d ticks, %d missed periods, %d overruns; packet period p50 %v p99 %v max %v; compute p99 %v",
		runFor, tm.Ticks, tm.Missed, tm.Overruns, tm.Period.Quantile(0.5), tm.Period.Quantile(0.99), tm.Period.Max(), tm.Compute.Quantile(0.99))
	// Which side missed: packets the simulator sent late arrive late (its own missed ticks are a
	// part of those, the rest the wire's); packets that arrived on time and waited for the loop
	// are the runtime's own.
	t.Logf("missed periods by side: %d late on arrival at the host (the simulator's own missed ticks: %d), %d the runtime's own (a packet waited in the socket p99 %v, max %v); control thread on CPUs %v",
		tm.BoardMissed, st.MissedTicks, int64(tm.Missed)-int64(tm.BoardMissed), tm.ReadDelay.Quantile(0.99), tm.ReadDelay.Max(), opts.ControlCPUs)
	t.Logf("simulator: %+v; base height while running %.4f..%.4f m", st, minH, maxH)
	if f := c.Fault(); f == "link_timeout" {
		stalled("the runtime latched link_timeout: no fresh sensor packet for %v at the worst (link timeout %v); the simulator's longest gap between ticks %v, the longest a packet waited for the loop %v",
			tm.Period.Max(), cfg.Limits.LinkTimeout, st.LongestGap, tm.ReadDelay.Max())
	} else if f != "" {
		t.Fatalf("the runtime faulted (%s) during the run", f)
	}
	if c.Phase() != core.PhaseRun {
		t.Fatalf("phase %v at the end, want run", c.Phase())
	}
	// The test bank holds the default pose by pure PD at the contract's default Kp (3 Nm/rad),
	// which sags to about 0.19 m under the robot's weight (the scripted data pre-compensate it).
	if fell || minH < 0.15 || maxH-minH > 0.03 {
		t.Fatalf("base height %.3f..%.3f m (fell: %v) while holding the pose", minH, maxH, fell)
	}
}
