package app

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

// Kill mosquitto under a running robot and bring it back on the same port, twice: control goes
// on with no fault and no missed period the outage caused, the runtime reconnects, republishes
// its retained state into the broker that forgot everything, and applies the command sent
// before the kills exactly once.
//
// How "no missed period caused by the outage" is judged. The flight recording stamps every link
// tick, so missedPeriods says when each missed period happened (its total matches the driver's
// own count, logged below). An outage window runs from the kill to 300 ms after the robot is
// back online (loss detection, reconnection attempts, TLS handshake and republishing included);
// its baseline window has the same length and follows at once, the robot connected and idle.
// During both the test only waits and starts no process: forking from this real-time process
// stalls the loop by itself (see mqtttest.PrepareRestart), so the broker's restart wakes a
// process prepared before the windows and the operator is an in-process client. The machine's
// own noise (two cores shared with other work, other real-time tests among it) misses periods
// in bursts at random; an outage window is suspect when it holds more missed periods than
// chance allows given its baseline (excessOver below 1%: with an empty baseline, 7 or more).
// Whatever the outage causes, it causes at every outage, while a burst of noise does not come
// back on cue: the test fails only if both outages are suspect. Sensitivity, measured by
// injecting a CPU stall into this process after each kill: 40 ms trips the core's link-timeout
// fault, which fails the test outright; 8 ms (8 to 16 missed periods per outage, the size of the
// machine's own worst bursts) failed it in 2 of 5 runs.
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

	type outage struct {
		kill, restart, online, end time.Time
		window                     time.Duration
	}
	var outages []outage
	const down = time.Second
	for i := range 2 {
		var u outage
		u.kill = time.Now()
		m.Kill()
		time.Sleep(down)
		u.restart = time.Now()
		m.Restart()
		o = dialOperator(t, m.URL(), op, tlsConfig, prefix+"state/connection")
		u.online = o.waitFor(t, 10*time.Second, prefix+"state/connection", `"online"`).at
		u.end = u.online.Add(300 * time.Millisecond)
		u.window = u.end.Sub(u.kill)
		time.Sleep(time.Until(u.end.Add(u.window))) // the baseline window
		outages = append(outages, u)
		t.Logf("outage %d: broker down %v; robot online %v after the restart", i+1,
			u.restart.Sub(u.kill).Round(time.Millisecond), u.online.Sub(u.restart).Round(time.Millisecond))

		// The broker came back empty: a fresh subscriber gets the republished retained state.
		// It subscribes in-process: starting a process (mosquitto_sub) from the process that
		// hosts the 1 kHz loop stalls that loop past the link timeout on this machine, which a
		// robot never does; the mosquitto_sub retained check is TestRuntimeExternalMosquitto's.
		fresh := dialOperator(t, m.URL(), op, tlsConfig, prefix+"state/mode", prefix+"state/skill", prefix+"state/bank")
		for topic, want := range map[string]string{"state/mode": `"mode":"run"`, "state/skill": `"name":"lean"`, "state/bank": `"name":"still"`} {
			fresh.waitFor(t, 5*time.Second, prefix+topic, want)
		}
		if i == 0 {
			m.PrepareRestart()
			// The adapter backs off from its last attempt unless its connection outlived the
			// longest backoff (5 s): start the second outage from the same state as the first.
			time.Sleep(time.Until(u.online.Add(5500 * time.Millisecond)))
		}
	}
	o = dialOperator(t, m.URL(), op, tlsConfig, replyTo)
	o.publish(t, prefix+"cmd/skill", commandPayload("after", time.Now(), 5*time.Second, replyTo, `"select":{"name":"still"}`))
	o.waitFor(t, 5*time.Second, replyTo, `"id":"after"`, `"ok":true`)
	timing := h.stop(t)
	ticks := h.recording(t)

	// Control went on: the recording holds every link tick through the outages, with no fault
	// and no change of mode.
	misses, holes := missedPeriods(ticks)
	if faults, at := eventsOf(ticks, "fault"); len(faults) != 0 {
		// Say whether the loop or its packets stalled just before, and where in the outages:
		// a fault in a gap the whole process shows is the machine's, not the runtime's.
		for i, f := range faults {
			t.Logf("fault %s (%s) %v after the first kill; late packets in the 200 ms before it: %s",
				f.Fault, f.Reason, at[i].at.Sub(outages[0].kill).Round(time.Millisecond),
				stalls(misses, at[i].at.Add(-200*time.Millisecond), at[i].at.Add(time.Millisecond)))
		}
		t.Fatalf("the core faulted: %+v", faults)
	}
	if modes, at := eventsOf(ticks, "mode_change"); at[len(at)-1].at.After(outages[0].kill) {
		t.Fatalf("mode changed to %s (%s) after the first kill", modes[len(modes)-1].Mode, modes[len(modes)-1].Reason)
	}
	// Applied exactly once each: the command sent before the kills was not replayed.
	switches, _ := eventsOf(ticks, "skill_switch")
	if len(switches) != 2 || *switches[0].To != 1 || *switches[1].To != 0 {
		t.Fatalf("skill switches %+v, want one to lean (before the kills) then one to still (after)", switches)
	}
	if done, _ := eventsOf(ticks, "command_done"); len(done) != 2 {
		t.Fatalf("the core applied %d commands, want 2", len(done))
	}

	t.Logf("whole run: %d missed periods from the recording (%d holes), %d by the driver's count, %d overruns in %d ticks",
		missedIn(misses, time.Time{}, time.Now()), holes, timing.Missed, timing.Overruns, timing.Ticks)
	suspect := 0
	for i, u := range outages {
		var downTicks, downFresh int
		for _, tk := range ticks {
			if !tk.at.Before(u.kill) && tk.at.Before(u.restart) {
				downTicks++
				if tk.fresh {
					downFresh++
				}
			}
		}
		inOutage := missedIn(misses, u.kill, u.end)
		inBaseline := missedIn(misses, u.end, u.end.Add(u.window))
		p := excessOver(inOutage, inBaseline)
		t.Logf("outage %d: %d link ticks (%d with a fresh packet) while the broker was down; missed periods %d in the outage window (%v: %s), %d in its baseline (%s); chance %.2g",
			i+1, downTicks, downFresh, inOutage, u.window.Round(time.Millisecond), stalls(misses, u.kill, u.end),
			inBaseline, stalls(misses, u.end, u.end.Add(u.window)), p)
		if p < 0.01 {
			suspect++
		}
	}
	if suspect == len(outages) {
		t.Fatal("every outage window missed more periods than its baseline explains: the outage disturbs the control loop")
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
// figure understates the chance of a noise burst landing in one window; hence two outages.
func excessOver(a, b int) float64 {
	n := a + b
	lc, _ := math.Lgamma(float64(n + 1))
	var tail float64
	for k := a; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		tail += math.Exp(lc - lk - lnk - float64(n)*math.Ln2)
	}
	return tail
}

func TestMissedPeriodsFromRecording(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	// ticks builds fresh ticks at the given offsets (µs), numbered from 1.
	ticks := func(offsets ...int) []tickRecord {
		var out []tickRecord
		for i, us := range offsets {
			out = append(out, tickRecord{index: uint64(i + 1), at: t0.Add(time.Duration(us) * time.Microsecond), fresh: true})
		}
		return out
	}
	silent := ticks(0, 1000, 3000, 4000)
	silent[1].fresh = false // the loop ticked on silence; the packet gap is 0 -> 3000 µs
	holed := ticks(0, 1000, 5000)
	holed[2].index = 4 // the recorder dropped tick 3: no gap is measured across it
	for _, tc := range []struct {
		name   string
		ticks  []tickRecord
		missed int
		holes  int
	}{
		{"steady", ticks(0, 1000, 2000, 3000), 0, 0},
		{"late within the slack", ticks(0, 1000, 2490, 3490), 0, 0},
		{"one period missed", ticks(0, 1000, 2600, 3600), 1, 0},
		{"a 10 ms stall", ticks(0, 1000, 11000, 12000), 9, 0},
		{"silent ticks between packets", silent, 2, 0},
		{"a dropped record", holed, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			misses, holes := missedPeriods(tc.ticks)
			if got := missedIn(misses, t0, t0.Add(time.Minute)); got != tc.missed || holes != tc.holes {
				t.Fatalf("missed %d holes %d, want %d and %d", got, holes, tc.missed, tc.holes)
			}
		})
	}
}

func TestExcessOver(t *testing.T) {
	for _, tc := range []struct {
		a, b int
		want float64
	}{
		{0, 0, 1}, {1, 1, 0.75}, {0, 5, 1}, {7, 0, 1.0 / 128}, {10, 0, 1.0 / 1024}, {9, 1, 11.0 / 1024},
	} {
		if got := excessOver(tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("excessOver(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
