//go:build linux

package robotboard_test

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/clock/clocktest"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/sim/robotboard"
	"golang.org/x/sys/unix"
)

// SCHED_FIFO priorities: the simulated board's threads above the host's control thread, as the
// real board's firmware owns its CPU. The machine is shared: without them ticks would be missed
// to other processes, not to the simulator.
const (
	processPriority = 1 // every other thread of the process: see clock.RealtimeProcess
	hostPriority    = 30
	boardPriority   = 40
)

// realtimeSubsteps runs the motor cards' PD at their 10 kHz in real time.
const realtimeSubsteps = 10

// realtimeThread locks the calling goroutine to its thread with SCHED_FIFO when permitted.
func realtimeThread(tb testing.TB) {
	runtime.LockOSThread()
	restore, err := clock.Realtime(hostPriority)
	if err != nil {
		tb.Logf("host thread without real-time priority: %v", err)
		tb.Cleanup(runtime.UnlockOSThread)
		return
	}
	tb.Cleanup(func() {
		if err := restore(); err != nil {
			tb.Error(err)
		}
		runtime.UnlockOSThread()
	})
}

// hilResult is a hardware-in-the-loop run's outcome.
type hilResult struct {
	standResult
	perception perception.Stats
	// machineStalls counts the kernel's late wake-ups of a real-time thread during the run
	// (probeMachine); machineWorst is the latest.
	machineStalls int
	machineWorst  time.Duration
}

// probeMachine watches, until stop is called, how late the machine wakes real-time threads of
// the board's priority: one thread pinned to each CPU sleeps to absolute 1 ms deadlines (no
// spinning, so they cost nearly nothing) and counts the wake-ups that came more than
// machineStall late. On a shared virtual machine the kernel or the hypervisor sometimes stalls a
// CPU that long, and other programs' real-time threads (another simulator, another test) may hold
// it; the board's tick, asleep in the same way between ticks, then misses its deadline through no
// fault of the simulator. A tick that overran by itself delays no probe: a probe sharing its CPU
// waits at most for the tick's work, well under a millisecond.
// machineStall is how late a probe's wake-up must be to count as the machine stalling: half a
// period, because a tick woken that late has less time left than its 10-substep physics needs
// (about 0.2 ms) plus the margin the pacer keeps. Measured: a run missed one tick while the
// worst probe wake-up was 0.94 ms late, just under the whole period this used to require.
const machineStall = 500 * time.Microsecond

func probeMachine(tb testing.TB) (stop func() (stalls int, worst time.Duration)) {
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cpus); err != nil {
		tb.Fatal(err)
	}
	var quit atomic.Bool
	type result struct {
		stalls int
		worst  time.Duration
	}
	done := make(chan result, cpus.Count())
	probes := 0
	for cpu := range runtime.NumCPU() {
		if !cpus.IsSet(cpu) {
			continue
		}
		probes++
		go func() {
			runtime.LockOSThread() // never unlocked: the pinned real-time thread dies with us
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				tb.Logf("machine probe %d not pinned: %v", cpu, err)
			}
			if _, err := clock.Realtime(boardPriority); err != nil {
				tb.Logf("machine probe %d without real-time priority: %v", cpu, err)
			}
			var res result
			var ts unix.Timespec
			_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			next := ts.Nano()
			for !quit.Load() {
				next += int64(time.Millisecond)
				wake := unix.NsecToTimespec(next)
				_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &wake, nil)
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				late := time.Duration(ts.Nano() - next)
				res.worst = max(res.worst, late)
				if late > machineStall {
					res.stalls++
					next = ts.Nano()
				}
			}
			done <- res
		}()
	}
	return func() (stalls int, worst time.Duration) {
		quit.Store(true)
		for range probes {
			r := <-done
			stalls, worst = stalls+r.stalls, max(worst, r.worst)
		}
		return stalls, worst
	}
}

// TestMain lets clocktest.KeepAwake start this test binary as its CPU spinner.
func TestMain(m *testing.M) { clocktest.Main(m) }

// runHIL serves the simulated robot in real time on one end of a veth pair (raw AF_PACKET
// sockets in two network namespaces) with its perception stream on loopback UDP, and stands it up
// with a host session on the other end, for d of wall-clock time.
func runHIL(tb testing.TB, d time.Duration) hilResult {
	restore, err := clock.RealtimeProcess(processPriority)
	if err != nil {
		tb.Logf("process without real-time threads: %v", err)
	} else {
		tb.Cleanup(func() {
			if err := restore(); err != nil {
				tb.Error(err)
			}
		})
	}
	hostNS, boardNS := linktest.VethPair(tb)
	boardConn, hostConn := boardNS.OpenEthernet(tb), hostNS.OpenEthernet(tb)
	r := newRobot(tb, robotboard.Config{Substeps: realtimeSubsteps, Seed: 3})
	rx, tx := perceptionLink(tb)
	srv := serve(tb, r, boardConn, robotboard.ServeOptions{MAC: boardConn.LocalMAC(), Priority: boardPriority, Perception: tx})
	realtimeThread(tb)
	stopProbe := probeMachine(tb)
	cfg := host.Config{Interface: hostNS.Interface(), MAC: hostConn.LocalMAC(), Logger: quietLog()}
	res := hilResult{standResult: standOverLink(tb, srv, r, hostConn, cfg, d)}
	res.machineStalls, res.machineWorst = stopProbe()
	waitAccepted(tb, rx, 1)
	var latest perception.Datagram
	if st := rx.Latest(time.Now(), &latest); !st.Valid {
		tb.Errorf("perception status %+v", st)
	}
	checkHeights(tb, &latest, nil)
	res.perception = rx.Stats()
	return res
}

func (res *hilResult) log(tb testing.TB, d time.Duration) {
	h, b := res.host, res.board
	tb.Logf("real time %v over veth: board %d ticks, %d missed, tick lateness p50 %v p99 %v max %v; "+
		"host %d commands, %d sensor packets, command loss %d, sensor loss %d, round trip p50 %v p99 %v; "+
		"base height while holding %.4f..%.4f m; perception %d sent, %d accepted, %d lost; "+
		"machine: %d real-time wake-ups over %v late on any CPU (worst %v)",
		d, b.Ticks, b.MissedTicks, b.LatenessP50, b.LatenessP99, b.LatenessMax,
		h.CommandsSent, h.SensorsReceived, h.CommandLoss, h.SensorLoss, h.LatencyP50, h.LatencyP99,
		res.heights.min, res.heights.max, b.PerceptionSent, res.perception.Accepted, res.perception.Lost,
		machineStall, res.machineStalls, res.machineWorst)
}

func (res *hilResult) check(tb testing.TB, d time.Duration) {
	tb.Helper()
	res.standResult.check(tb)
	switch missed := res.board.MissedTicks; {
	case missed != 0 && res.machineStalls == 0:
		tb.Errorf("%d missed ticks, while the kernel woke a real-time thread on time throughout", missed)
	case missed != 0:
		tb.Logf("%d missed ticks not held against the simulator: the kernel woke a real-time thread "+
			"more than %v late %d times during the run (worst %v)", missed, machineStall, res.machineStalls, res.machineWorst)
	}
	// Simulated time runs with the wall clock: 50 samples a second, all delivered on loopback.
	p := res.perception
	if want := uint64(d / time.Second * 50); p.Accepted < want-2 || p.Lost != 0 || p.OutOfOrder != 0 || p.Datagrams != p.Accepted {
		tb.Errorf("perception %+v, want about %d accepted and nothing lost", p, want)
	}
}

// TestHardwareInTheLoop: the simulated robot in real time behind raw Ethernet, and a host session
// standing it up and holding it for 10 s: no missed tick (unless the machine demonstrably missed
// real-time deadlines itself), no lost packet, the base at standing height, the perception stream
// complete.
func TestHardwareInTheLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s real-time run")
	}
	clocktest.KeepAwake(t) // first, before the test raises its threads
	const d = 10 * time.Second
	res := runHIL(t, d)
	res.log(t, d)
	res.check(t, d)
}

// BenchmarkRealtime60s is the hardware-in-the-loop run for a minute (DUALFORCE_REALTIME_SECONDS
// overrides the length): one iteration whatever b.N asks, reporting missed ticks, tick lateness,
// lost packets, the base height range, and how often the machine itself stalled real-time
// threads for over a millisecond (see probeMachine).
func BenchmarkRealtime60s(b *testing.B) {
	d := 60 * time.Second
	if s := os.Getenv("DUALFORCE_REALTIME_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			b.Fatalf("DUALFORCE_REALTIME_SECONDS=%q: want whole seconds, at least 3", s)
		}
		d = time.Duration(n) * time.Second
	}
	var res hilResult
	for b.Loop() {
		res = runHIL(b, d)
	}
	res.log(b, d)
	res.check(b, d)
	bs, hs := res.board, res.host
	b.ReportMetric(float64(bs.MissedTicks), "missed-ticks")
	b.ReportMetric(float64(bs.LatenessP50.Nanoseconds())/1e3, "lateness-p50-us")
	b.ReportMetric(float64(bs.LatenessP99.Nanoseconds())/1e3, "lateness-p99-us")
	b.ReportMetric(float64(hs.CommandLoss+hs.SensorLoss), "lost-packets")
	b.ReportMetric(res.heights.min, "height-min-m")
	b.ReportMetric(res.heights.max, "height-max-m")
	b.ReportMetric(float64(res.machineStalls), "machine-stalls")
}
