package app

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

// BenchmarkPublishToApplied measures, on the real runtime driving the emulated board in real
// time, how long a skill command takes from the operator's publish to the link tick at which
// the core applies it, through the embedded broker and through mosquitto with TLS.
//
// Commands are applied at the next policy tick (50 Hz) by design, so a command waits up to one
// policy period for it. To tell that wait from everything else, a second in-process subscriber
// (the monitor) timestamps the command as the broker delivers it, which is when the robot's
// adapter receives it too:
//
//	applied   publish -> the tick that applied it (the flight recording's stamp of that tick)
//	delivered publish -> the broker's delivery (publish to queued, less the adapter's validation)
//	tickwait  delivery -> the tick that applied it: the policy-tick quantisation, 0 to 20 ms
//	late      commands applied later than the first policy tick after their delivery
//
// Each command is published at a random phase of the policy period, so tickwait spreads
// uniformly over it. ns/op is the pacing of the loop (the random phase plus waiting for the
// reply), not a latency.
func BenchmarkPublishToApplied(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		cfg := testConfig(b)
		h := startHarness(b, cfg, Options{AutoRun: true})
		url := h.rt.MQTTURL()
		// The embedded broker without a password file admits anyone on loopback.
		pub := dialOperator(b, url, mqtttest.Account{}, nil, prefix+"state/mode", benchReplyTo)
		monitor := dialOperator(b, url, mqtttest.Account{}, nil, prefix+"cmd/skill")
		benchmarkApplied(b, h, pub, monitor)
	})
	b.Run("mosquitto-tls", func(b *testing.B) {
		robot, op := mqtttest.Robot(testRobot), mqtttest.Operator
		m := mqtttest.Start(b, mqtttest.Options{Accounts: []mqtttest.Account{robot, op}})
		cfg := testConfig(b)
		externalBroker(b, &cfg, m, robot)
		h := startHarness(b, cfg, Options{AutoRun: true})
		tlsConfig := m.Certs.ClientTLS(b)
		pub := dialOperator(b, m.URL(), op, tlsConfig, prefix+"state/mode", benchReplyTo)
		// The ACL lets only the robot's account read its commands.
		monitor := dialOperator(b, m.URL(), robot, tlsConfig, prefix+"cmd/skill")
		benchmarkApplied(b, h, pub, monitor)
	})
}

const benchReplyTo = prefix + "reply/bench"

func benchmarkApplied(b *testing.B, h *harness, pub, monitor *operator) {
	pub.waitFor(b, 15*time.Second, prefix+"state/mode", `"mode":"run"`)
	type sample struct {
		target          int
		sent, delivered time.Time
	}
	var samples []sample
	target := 0 // AutoRun starts latent 0
	for i := 0; b.Loop(); i++ {
		time.Sleep(rand.N(20 * time.Millisecond))
		target = 1 - target
		id := fmt.Sprintf("bench-%d", i)
		payload := commandPayload(id, time.Now(), 5*time.Second, benchReplyTo, fmt.Sprintf(`"select":{"index":%d}`, target))
		sent := time.Now()
		pub.publish(b, prefix+"cmd/skill", payload)
		pub.waitFor(b, 5*time.Second, benchReplyTo, `"id":"`+id+`"`, `"ok":true`)
		delivered := monitor.waitFor(b, 5*time.Second, prefix+"cmd/skill", `"id":"`+id+`"`).at
		samples = append(samples, sample{target, sent, delivered})
	}
	h.stop(b)
	ticks := h.recording(b)

	var applied, delivered, tickwait []time.Duration
	late := 0
	next := 0 // ticks before next are spent
	for _, s := range samples {
		for next < len(ticks) && !switchedTo(&ticks[next], s.target, s.sent) {
			next++
		}
		if next == len(ticks) {
			b.Fatalf("no switch to latent %d after %v in the recording", s.target, s.sent)
		}
		at := ticks[next].at
		applied = append(applied, at.Sub(s.sent))
		delivered = append(delivered, s.delivered.Sub(s.sent))
		tickwait = append(tickwait, at.Sub(s.delivered))
		for _, tk := range ticks[:next] {
			if tk.action != nil && tk.at.After(s.delivered) {
				late++ // an earlier policy tick came after the delivery
				break
			}
		}
	}
	report := func(d []time.Duration, name string) {
		slices.Sort(d)
		q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond) }
		b.ReportMetric(q(0.50), name+"-p50-ms")
		b.ReportMetric(q(0.99), name+"-p99-ms")
	}
	report(applied, "applied")
	report(delivered, "delivered")
	report(tickwait, "tickwait")
	b.ReportMetric(float64(late), "late")
}

// switchedTo reports whether tick tk, stamped after since, switched to bank latent target.
func switchedTo(tk *tickRecord, target int, since time.Time) bool {
	if !tk.at.After(since) {
		return false
	}
	for _, e := range tk.events {
		if e.Kind == "skill_switch" && e.To != nil && *e.To == target {
			return true
		}
	}
	return false
}
