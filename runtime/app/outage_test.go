package app

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

// Kill mosquitto under a running robot and bring it back on the same port: control goes on with
// no fault and no missed period the outage caused, the runtime reconnects, republishes its
// retained state into the broker that forgot everything, and applies the command sent before
// the kill exactly once.
//
// How "no missed period caused by the outage" is judged. The flight recording stamps every link
// tick, so missedPeriods says when each missed period happened (its total matches the driver's
// own count, logged below). The outage window runs from the kill to 300 ms after the robot is
// back online (loss detection, reconnection attempts, TLS handshake and republishing included);
// the baseline window has the same length and follows at once, the robot connected and idle.
// During both the test only waits, and it starts no process:
// forking from this real-time process stalls the loop by itself (see mqtttest), so the broker's
// restart wakes a process prepared before the windows and the operator is an in-process client.
// The machine's own noise (two cores shared with other work) misses periods at random; the
// outage window fails the test when it holds more missed periods than chance allows given the
// baseline (excessOver).
func TestRuntimeMosquittoOutage(t *testing.T) {
	robot, op := mqtttest.Robot(testRobot), mqtttest.Operator
	m := mqtttest.Start(t, mqtttest.Options{Accounts: []mqtttest.Account{robot, op}})
	cfg := testConfig(t)
	externalBroker(t, &cfg, m, robot)
	h := startHarness(t, cfg, Options{AutoRun: true})
	tlsConfig := m.Certs.ClientTLS(t)
	replyTo := prefix + "reply/op"
	o := dialOperator(t, m.URL(), op, tlsConfig, prefix+"state/mode", replyTo)
	o.waitFor(t, 15*time.Second, prefix+"state/mode", `"mode":"run"`)
	o.publish(t, prefix+"cmd/skill", commandPayload("before", time.Now(), 5*time.Second, replyTo, `"select":{"name":"lean"}`))
	o.waitFor(t, 5*time.Second, replyTo, `"id":"before"`, `"ok":true`)

	const down = time.Second
	killAt := time.Now()
	m.Kill()
	time.Sleep(down)
	restartAt := time.Now()
	m.Restart()
	o = dialOperator(t, m.URL(), op, tlsConfig, prefix+"state/connection", replyTo)
	online := o.waitFor(t, 10*time.Second, prefix+"state/connection", `"online"`)
	outageEnd := online.at.Add(300 * time.Millisecond)
	window := outageEnd.Sub(killAt)
	time.Sleep(time.Until(outageEnd.Add(window))) // the baseline window
	t.Logf("broker down %v; robot online %v after the restart",
		restartAt.Sub(killAt).Round(time.Millisecond), online.at.Sub(restartAt).Round(time.Millisecond))

	// The broker came back empty: fresh subscribers get the republished retained state.
	for topic, want := range map[string]string{"state/mode": `"mode":"run"`, "state/skill": `"name":"lean"`, "state/bank": `"name":"still"`} {
		if got := m.Retained(t, op, prefix+topic); !strings.Contains(got, want) {
			t.Fatalf("a fresh mosquitto_sub got %s = %q, want %s", topic, got, want)
		}
	}
	o.publish(t, prefix+"cmd/skill", commandPayload("after", time.Now(), 5*time.Second, replyTo, `"select":{"name":"still"}`))
	o.waitFor(t, 5*time.Second, replyTo, `"id":"after"`, `"ok":true`)
	timing := h.stop(t)
	ticks := h.recording(t)

	// Control went on: the recording holds every link tick through the outage, with no fault
	// and no change of mode.
	if faults, _ := eventsOf(ticks, "fault"); len(faults) != 0 {
		t.Fatalf("the core faulted: %+v", faults)
	}
	if modes, at := eventsOf(ticks, "mode_change"); at[len(at)-1].at.After(killAt) {
		t.Fatalf("mode changed to %s (%s) after the kill", modes[len(modes)-1].Mode, modes[len(modes)-1].Reason)
	}
	var downTicks, downFresh int
	for _, tk := range ticks {
		if !tk.at.Before(killAt) && tk.at.Before(restartAt) {
			downTicks++
			if tk.fresh {
				downFresh++
			}
		}
	}
	t.Logf("while the broker was down: %d link ticks, %d with a fresh sensor packet", downTicks, downFresh)
	// Applied exactly once each: the command sent before the kill was not replayed.
	switches, _ := eventsOf(ticks, "skill_switch")
	if len(switches) != 2 || *switches[0].To != 1 || *switches[1].To != 0 {
		t.Fatalf("skill switches %+v, want one to lean (before the kill) then one to still (after)", switches)
	}
	if done, _ := eventsOf(ticks, "command_done"); len(done) != 2 {
		t.Fatalf("the core applied %d commands, want 2", len(done))
	}

	misses, holes := missedPeriods(ticks)
	inOutage := missedIn(misses, killAt, outageEnd)
	inBaseline := missedIn(misses, outageEnd, outageEnd.Add(window))
	t.Logf("missed periods: %d in the outage window (%v from the kill: %s), %d in the baseline window after it (%s)",
		inOutage, window.Round(time.Millisecond), stalls(misses, killAt, outageEnd), inBaseline, stalls(misses, outageEnd, outageEnd.Add(window)))
	t.Logf("whole run: %d missed periods from the recording (%d holes), %d by the driver's count, %d overruns in %d ticks",
		missedIn(misses, time.Time{}, time.Now()), holes, timing.Missed, timing.Overruns, timing.Ticks)
	if p := excessOver(inOutage, inBaseline); p < 0.001 {
		t.Fatalf("%d missed periods while the broker was down or reconnecting against %d in as long after (chance %.2g): the outage disturbed the control loop",
			inOutage, inBaseline, p)
	}
}

// stalls lists the late packets in [from, to) as "+offset:periods" from the window's start.
func stalls(misses []miss, from, to time.Time) string {
	var parts []string
	for _, m := range misses {
		if !m.at.Before(from) && m.at.Before(to) {
			parts = append(parts, fmt.Sprintf("+%dms:%d", m.at.Sub(from).Milliseconds(), m.periods))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// excessOver is the chance that at least a of a+b missed periods fall in the first of two
// equally long windows if both windows miss periods at the same rate: the exact one-sided test
// comparing two Poisson counts of equal exposure (given a+b, a is binomial with p = 1/2).
// Missed periods come in bursts (one stall misses several), more spread than Poisson, so this
// figure understates the chance of a noise burst landing in one window; the test's threshold
// (0.001) leaves room for that.
func excessOver(a, b int) float64 {
	n := a + b
	var tail float64
	for k := a; k <= n; k++ {
		lc, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		tail += math.Exp(lc - lk - lnk - float64(n)*math.Ln2)
	}
	return tail
}
