package app

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// TestRuntimeEndToEnd runs the runtime binary's wiring against the emulated master board over
// the UDP tunnel, with the embedded broker, and drives it with the real mosquitto clients.
func TestRuntimeEndToEnd(t *testing.T) {
	for _, bin := range []string{"mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian mosquitto-clients; make setup installs it)", bin)
		}
	}
	cfg := testConfig(t)
	cfg.Metrics.Listen = freeAddr(t, "tcp")
	h := startHarness(t, cfg, Options{})
	c := h.rt.Core()
	waitFor(t, 10*time.Second, "standing", func() bool {
		return c.Phase() == core.PhaseHold || c.Fault() != ""
	})
	if c.Fault() != "" {
		t.Fatalf("fault %q while standing up (phase %v)", c.Fault(), c.Phase())
	}
	broker, port, _ := net.SplitHostPort(cfg.MQTT.Listen)
	prefix := "solo/v1/" + testRobot + "/"

	pub := func(topic, payload string) {
		t.Helper()
		out, err := exec.Command("mosquitto_pub", "-h", broker, "-p", port, "-q", "1", "-t", prefix+topic, "-m", payload).CombinedOutput()
		if err != nil {
			t.Fatalf("mosquitto_pub %s: %v: %s", topic, err, out)
		}
	}
	stamp := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }

	// Watch events from before the commands go out. The retained state/mode arrives as soon as
	// the subscription is in place: that line proves it.
	events := exec.Command("mosquitto_sub", "-h", broker, "-p", port, "-q", "1", "-t", prefix+"events", "-t", prefix+"state/mode", "-v")
	evOut, _ := events.StdoutPipe()
	if err := events.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = events.Process.Kill(); _ = events.Wait() }()
	seen := collectLines(evOut)
	waitFor(t, 5*time.Second, "mosquitto_sub subscribed (retained state/mode)", func() bool { return seen.has(prefix + "state/mode ") })

	pub("cmd/mode", fmt.Sprintf(`{"id":"m1","issued_at":%q,"expires_in_ms":5000,"mode":"run"}`, stamp()))
	waitFor(t, 5*time.Second, "running", func() bool { return c.Phase() == core.PhaseRun })
	pub("cmd/skill", fmt.Sprintf(`{"id":"s1","issued_at":%q,"expires_in_ms":5000,"select":{"name":"lean"}}`, stamp()))
	var snap corebus.Snapshot
	waitFor(t, 5*time.Second, "skill 1 running", func() bool { return c.LoadMonitor(&snap) && snap.Skill.Index == 1 })
	want := float64(skills.StandingPose[1]) + 0.3*math.Tanh(1)
	waitFor(t, 5*time.Second, "FL_HFE at the lean skill's target", func() bool {
		return c.LoadMonitor(&snap) && math.Abs(snap.Robot.JointPos[1]-want) < 0.02
	})

	// Retained state for a late subscriber.
	out, err := exec.Command("mosquitto_sub", "-h", broker, "-p", port, "-t", prefix+"state/skill", "-C", "1", "-W", "5").Output()
	if err != nil {
		t.Fatalf("mosquitto_sub state/skill: %v", err)
	}
	if !strings.Contains(string(out), `"lean"`) && !strings.Contains(string(out), `"index":1`) {
		t.Fatalf("retained state/skill %s", out)
	}
	// A malformed command is rejected before it reaches the core: once its rejection is out,
	// nothing has changed.
	pub("cmd/skill", `{"id":"bad","select":`)
	waitFor(t, 5*time.Second, "the malformed command's rejection event", func() bool {
		return seen.has(`"type":"command_rejected","command":"skill"`)
	})
	if c.LoadMonitor(&snap); snap.Skill.Index != 1 || c.Phase() != core.PhaseRun {
		t.Fatalf("malformed command changed the robot: skill %d phase %v", snap.Skill.Index, c.Phase())
	}

	// Metrics are served.
	resp, err := http.Get("http://" + cfg.Metrics.Listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "loop_period") {
		t.Fatalf("metrics without the loop period:\n%.500s", body)
	}

	tm := h.stop(t)
	_ = events.Process.Kill()
	for _, want := range []string{"skill_switch", "mode_change"} {
		if !seen.has(want) {
			t.Errorf("no %s event seen by mosquitto_sub:\n%s", want, seen.text())
		}
	}
	t.Logf("loop: %d ticks, %d missed periods, %d overruns, period p50 %v p99 %v, compute p99 %v",
		tm.Ticks, tm.Missed, tm.Overruns, tm.Period.Quantile(0.5), tm.Period.Quantile(0.99), tm.Compute.Quantile(0.99))

	// The flight recording holds the run.
	ticks := h.recording(t)
	policy := 0
	for _, tk := range ticks {
		if tk.action != nil {
			policy++
		}
	}
	if len(ticks) < 500 || policy == 0 {
		t.Fatalf("recording holds %d ticks, %d policy ticks", len(ticks), policy)
	}
	t.Logf("recording: %d ticks, %d with a policy step", len(ticks), policy)
}

// lines collects what a child process prints, line by line, for waiting on a line that proves
// something happened.
type lines struct {
	mu  sync.Mutex
	all []string
}

func collectLines(r io.Reader) *lines {
	l := &lines{}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
		}
	}()
	return l
}

// has reports whether a line so far contains sub.
func (l *lines) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.all, func(s string) bool { return strings.Contains(s, sub) })
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}
