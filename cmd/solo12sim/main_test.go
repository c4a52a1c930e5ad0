package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/proto"
)

// With SOLO12SIM_MAIN set, the test binary is the command: the signal test runs it as a child.
func TestMain(m *testing.M) {
	if os.Getenv("SOLO12SIM_MAIN") != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want error
		text string
	}{
		{[]string{"--help"}, flag.ErrHelp, "obstacle_fenced"},
		{[]string{"--transport", "wifi"}, errUsage, `--transport "wifi"`},
		{[]string{"--transport", "ethernet"}, errUsage, "needs --iface"},
		{[]string{"--perception-hz", "0"}, errUsage, "--perception-hz 0"},
		{[]string{"--perception-hz", "NaN"}, errUsage, "--perception-hz NaN"},
		{[]string{"--substeps", "-1"}, errUsage, "--substeps -1"},
		{[]string{"--priority", "100"}, errUsage, "--priority 100"},
		{[]string{"--stats", "-1s"}, errUsage, "--stats -1s"},
		{[]string{"--log-level", "loud"}, errUsage, "log-level"},
		{[]string{"extra"}, errUsage, "unexpected arguments"},
		{[]string{"--world", "atlantis", "--listen", "127.0.0.1:0"}, nil, ""},
	} {
		var out bytes.Buffer
		err := run(context.Background(), tc.args, &out)
		switch {
		case tc.want == nil:
			if err == nil || !strings.Contains(err.Error(), "no built-in world") {
				t.Errorf("%q: %v", tc.args, err)
			}
		case !errors.Is(err, tc.want) || !strings.Contains(out.String(), tc.text):
			t.Errorf("%q: %v, output %q", tc.args, err, out.String())
		}
	}
}

// logLines is a log sink that hands each complete line to a channel as well.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLogLines() *logLines { return &logLines{lines: make(chan string, 1024)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if strings.HasSuffix(line, "\n") {
			select {
			case l.lines <- line:
			default:
			}
		}
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

var addressRE = regexp.MustCompile(`msg="serving the simulated Solo12".* address=(\S+)`)

// waitServing reads log lines until the serving line and returns the address it names.
func waitServing(t *testing.T, lines <-chan string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-lines:
			if m := addressRE.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatal("the simulator never said where it serves")
		}
	}
}

// talk connects a host session over the UDP tunnel, enables the motors and exchanges n packets.
// These tests check what the command does, not its timing: the session waits up to 2 s for a
// packet instead of the SDK's 50 ms, so that a loaded machine cannot fail them.
func talk(t *testing.T, addr string, n int) host.Stats {
	t.Helper()
	conn, err := link.DialUDP(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := host.New(conn, host.Config{Interface: "udp " + addr, SensorTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if _, err := h.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cmd proto.Command
	for d := range cmd.Drivers {
		cmd.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
	}
	var in proto.Sensor
	for i := range n {
		if err := h.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := h.Receive(&in); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
	}
	return h.Stats()
}

// The command serves a host over the UDP tunnel, in real time and in lockstep, streams
// perception, logs statistics and stops cleanly when its context ends.
func TestServesAHost(t *testing.T) {
	for _, realtime := range []string{"true", "false"} {
		t.Run("realtime="+realtime, func(t *testing.T) {
			rx, err := perception.Listen("127.0.0.1:0", perception.ReceiverOptions{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer rx.Close()
			logs := newLogLines()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--perception-addr", rx.Addr().String(),
					"--realtime=" + realtime, "--stats", "100ms", "--world", "obstacle"}, logs)
			}()
			addr := waitServing(t, logs.lines)
			st := talk(t, addr, 300)
			if st.SensorsReceived != 300 || st.CommandLoss != 0 {
				t.Errorf("host stats %+v", st)
			}
			for deadline := time.Now().Add(5 * time.Second); rx.Stats().Accepted == 0 || !strings.Contains(logs.String(), "msg=statistics"); {
				if time.Now().After(deadline) {
					t.Fatalf("no perception (%+v) or no statistics:\n%s", rx.Stats(), logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			for _, want := range []string{"msg=statistics", `msg="final statistics"`, "board=ACTIVE_CONTROL", `msg="shut down cleanly"`, "world=obstacle", "base_xy_m=", "goal_distance_m=", "at_goal=false", "goal_reached=false"} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %s:\n%s", want, out)
				}
			}
		})
	}
}

// The serving line names the world's goal: drawn from --seed with the world's jitter by default,
// where the world's file puts it with --jitter=false (make run: the runtime is sent to the goal
// cmd/skillrt/sim.yaml names, the obstacle worlds' 2 m ahead).
func TestJitterFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		goal string
	}{
		{nil, "goal_xy_m=1.90,-0.15"},
		{[]string{"--seed", "3"}, "goal_xy_m=2.04,0.32"},
		{[]string{"--jitter=false"}, "goal_xy_m=2.00,0.00"},
		{[]string{"--jitter=false", "--seed", "3"}, "goal_xy_m=2.00,0.00"},
	} {
		logs := newLogLines()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"--listen", "127.0.0.1:0", "--perception-addr", "", "--priority", "0", "--stats", "0", "--world", "obstacle"}, tc.args...), logs)
		}()
		waitServing(t, logs.lines)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if out := logs.String(); !strings.Contains(out, tc.goal+" ") {
			t.Errorf("%q: the serving line lacks %s:\n%s", tc.args, tc.goal, out)
		}
	}
}

// SIGINT and SIGTERM stop the command cleanly, exit status 0.
func TestSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "--listen", "127.0.0.1:0", "--perception-addr", "", "--priority", "0", "--stats", "0")
			cmd.Env = append(os.Environ(), "SOLO12SIM_MAIN=1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// A failed assertion below must not leave the simulator running after the test.
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			lines := make(chan string, 64)
			var out strings.Builder
			var mu sync.Mutex
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					mu.Lock()
					out.WriteString(sc.Text() + "\n")
					mu.Unlock()
					lines <- sc.Text() + "\n"
				}
				close(lines)
			}()
			addr := waitServing(t, lines)
			talk(t, addr, 50)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for range lines { // drain until the child closes stderr
			}
			err = cmd.Wait()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !strings.Contains(out.String(), "shut down cleanly") {
				t.Fatalf("exit: %v\n%s", err, out.String())
			}
		})
	}
}
