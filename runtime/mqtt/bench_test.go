package mqtt

import (
	"context"
	"crypto/tls"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// BenchmarkCommandLatency measures from an operator's QoS 1 publish of a
// command to the command being queued to the core, validated.
func BenchmarkCommandLatency(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		broker := startEmbedded(b, BrokerConfig{})
		benchmarkLatency(b, Config{Broker: broker.URL(), Credentials: broker.RobotCredentials()}, Credentials{}, nil)
	})
	b.Run("mosquitto-tls", func(b *testing.B) {
		m := startMosquitto(b)
		benchmarkLatency(b, Config{Broker: m.url(), Credentials: robotAccount, TLS: m.tls()}, operatorAccount, m.clientTLS(b))
	})
}

func benchmarkLatency(b *testing.B, cfg Config, opCreds Credentials, opTLS *tls.Config) {
	core := newFakeCore()
	core.commands = corebus.NewRing[corebus.Command](1 << 16) // the benchmark outpaces the 50 Hz drain
	arrived := make(chan time.Time, 1)
	core.offered = func(corebus.Command) { arrived <- time.Now() }
	startAdapter(b, cfg, core)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	op, err := DialOperator(ctx, OperatorConfig{RobotID: testRobot, Broker: cfg.Broker, Credentials: opCreds, TLS: cfg.TLS})
	if err != nil {
		b.Fatal(err)
	}
	waitOnline(b, ctx, op)
	op.Close()
	topics, _ := NewTopics(testRobot)
	client := rawClient(b, cfg.Broker, opCreds, opTLS)
	topic := topics.Command(RouteMode)
	latencies := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		payload := command(map[string]any{"mode": "stand"})
		sent := time.Now()
		client.Publish(topic, 1, false, payload)
		select {
		case at := <-arrived:
			latencies = append(latencies, at.Sub(sent))
		case <-time.After(5 * time.Second):
			b.Fatal("command never reached the core")
		}
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
