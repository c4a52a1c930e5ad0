package mqtt

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

const testRobot = "r1"

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startEmbedded(t testing.TB, cfg BrokerConfig) *Broker {
	t.Helper()
	cfg.RobotID = testRobot
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	cfg.Logger = quietLog
	b, err := StartBroker(cfg)
	if err != nil {
		t.Fatalf("StartBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// startAdapter runs an adapter for core until the test ends or stop is called.
func startAdapter(t testing.TB, cfg Config, core *fakeCore) (stop func()) {
	t.Helper()
	cfg.RobotID = testRobot
	cfg.Logger = quietLog
	if cfg.Backoff == (Backoff{}) {
		cfg.Backoff = Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	}
	a, err := New(cfg, core)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	core.start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// received is one message a collector saw.
type received struct {
	topic    string
	payload  string
	retained bool
}

// collector records every message matching its filters.
type collector struct {
	mu   sync.Mutex
	msgs []received
}

func (c *collector) handler(_ paho.Client, m paho.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, received{m.Topic(), string(m.Payload()), m.Retained()})
}

func (c *collector) find(pred func(received) bool) (received, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if pred(m) {
			return m, true
		}
	}
	return received{}, false
}

func (c *collector) count(pred func(received) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.msgs {
		if pred(m) {
			n++
		}
	}
	return n
}

func (c *collector) waitFor(t testing.TB, what string, pred func(received) bool) received {
	t.Helper()
	var got received
	eventually(t, 5*time.Second, what, func() bool {
		var ok bool
		got, ok = c.find(pred)
		return ok
	})
	return got
}

func onTopic(topic string, contains ...string) func(received) bool {
	return func(m received) bool {
		if m.topic != topic {
			return false
		}
		for _, s := range contains {
			if !strings.Contains(m.payload, s) {
				return false
			}
		}
		return true
	}
}

// rawClient is a plain paho client for a test operator that needs to send
// arbitrary bytes.
func rawClient(t testing.TB, url string, creds Credentials, tlsConfig *tls.Config) paho.Client {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker(url).SetClientID("test-" + randomHex(4)).
		SetUsername(creds.Username).SetPassword(creds.Password).SetTLSConfig(tlsConfig).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetOrderMatters(false)
	c := paho.NewClient(opts)
	if err := waitToken(context.Background(), c.Connect(), 5*time.Second); err != nil {
		t.Fatalf("connecting test client to %s: %v", url, err)
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c
}

func subscribe(t testing.TB, c paho.Client, filter string) *collector {
	t.Helper()
	col := &collector{}
	if err := waitToken(context.Background(), c.Subscribe(filter, 1, col.handler), 5*time.Second); err != nil {
		t.Fatalf("subscribing to %s: %v", filter, err)
	}
	return col
}

func publish(t testing.TB, c paho.Client, topic string, retained bool, payload []byte) {
	t.Helper()
	if err := waitToken(context.Background(), c.Publish(topic, 1, retained, payload), 5*time.Second); err != nil {
		t.Fatalf("publishing to %s: %v", topic, err)
	}
}

// command builds a command payload: id, issued_at now and expires_in_ms
// 5000 unless fields override them (a nil value removes a field).
func command(fields map[string]any) []byte {
	m := map[string]any{
		"id":            "c-" + randomHex(6),
		"issued_at":     time.Now().UTC().Format(time.RFC3339Nano),
		"expires_in_ms": 5000,
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// certFiles are a CA and a server certificate for 127.0.0.1 and localhost.
type certFiles struct{ ca, cert, key string }

func newCerts(t testing.TB) certFiles {
	t.Helper()
	c := mqtttest.NewCerts(t)
	return certFiles{c.CA, c.Cert, c.Key}
}

// mosquitto is mqtttest's real mosquitto (TLS, a password file, the ACL of
// testdata/mosquitto.acl) in the shape this package's tests use.
type mosquitto struct {
	*mqtttest.Mosquitto
	port  int
	certs certFiles
}

// Accounts in the mosquitto password file: the robot (its username is the
// robot id, as the ACL wants) and an operator.
var (
	robotAccount    = Credentials(mqtttest.Robot(testRobot))
	operatorAccount = Credentials(mqtttest.Operator)
)

func startMosquitto(t testing.TB) *mosquitto {
	t.Helper()
	m := mqtttest.Start(t, mqtttest.Options{Accounts: []mqtttest.Account{mqtttest.Account(robotAccount), mqtttest.Account(operatorAccount)}})
	return &mosquitto{Mosquitto: m, port: m.Port(), certs: certFiles{m.Certs.CA, m.Certs.Cert, m.Certs.Key}}
}

func (m *mosquitto) url() string { return m.URL() }

func (m *mosquitto) tls() TLSFiles { return TLSFiles{CAFile: m.certs.ca} }

func (m *mosquitto) start() { m.Restart() }

func (m *mosquitto) kill() { m.Kill() }

// client runs mosquitto_pub or mosquitto_sub as the operator over TLS.
func (m *mosquitto) client(ctx context.Context, tool string, args ...string) *exec.Cmd {
	return m.Command(ctx, mqtttest.Operator, tool, args...)
}

func (m *mosquitto) clientTLS(t testing.TB) *tls.Config {
	cfg, err := brokerTLS(m.url(), m.tls())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
