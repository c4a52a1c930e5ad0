package mqtt

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
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
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "solo test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := certFiles{filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")}
	for path, block := range map[string]*pem.Block{
		files.ca: {Type: "CERTIFICATE", Bytes: caDER}, files.cert: {Type: "CERTIFICATE", Bytes: der},
		files.key: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// mosquitto is a real mosquitto broker the test starts, kills and restarts
// on a fixed loopback port, with TLS, a password file and the ACL of
// testdata/mosquitto.acl.
type mosquitto struct {
	t     testing.TB
	dir   string
	port  int
	certs certFiles
	cmd   *exec.Cmd
	log   *os.File
}

// Accounts in the mosquitto password file: the robot (its username is the
// robot id, as the ACL wants) and an operator.
var (
	robotAccount    = Credentials{testRobot, "robot-pass"}
	operatorAccount = Credentials{"op", "op-pass"}
)

func startMosquitto(t testing.TB) *mosquitto {
	t.Helper()
	for _, bin := range []string{"mosquitto", "mosquitto_passwd", "mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (apt-get install mosquitto mosquitto-clients): %v", bin, err)
		}
	}
	m := &mosquitto{t: t, dir: t.TempDir(), port: freePort(t), certs: newCerts(t)}
	passwd := filepath.Join(m.dir, "passwd")
	for i, acct := range []Credentials{robotAccount, operatorAccount} {
		args := []string{"-b", passwd, acct.Username, acct.Password}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v: %s", err, out)
		}
	}
	acl, err := filepath.Abs("testdata/mosquitto.acl")
	if err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`user root
per_listener_settings false
allow_anonymous false
password_file %s
acl_file %s
persistence false
set_tcp_nodelay true
log_dest stderr
log_type error
log_type warning
listener %d 127.0.0.1
cafile %s
certfile %s
keyfile %s
`, passwd, acl, m.port, m.certs.ca, m.certs.cert, m.certs.key)
	if err := os.WriteFile(filepath.Join(m.dir, "mosquitto.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if m.log, err = os.Create(filepath.Join(m.dir, "mosquitto.log")); err != nil {
		t.Fatal(err)
	}
	m.start()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			out, _ := os.ReadFile(m.log.Name())
			t.Logf("mosquitto log:\n%s", out)
		}
		m.log.Close()
	})
	return m
}

func (m *mosquitto) url() string { return fmt.Sprintf("ssl://127.0.0.1:%d", m.port) }

func (m *mosquitto) tls() TLSFiles { return TLSFiles{CAFile: m.certs.ca} }

func (m *mosquitto) start() {
	m.t.Helper()
	m.cmd = exec.Command("mosquitto", "-c", filepath.Join(m.dir, "mosquitto.conf"))
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("starting mosquitto: %v", err)
	}
	eventually(m.t, 5*time.Second, "mosquitto to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", m.port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// kill stops mosquitto the hard way, as a crash or power loss would.
func (m *mosquitto) kill() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	m.cmd = nil
}

// client runs mosquitto_pub or mosquitto_sub as the operator over TLS.
func (m *mosquitto) client(ctx context.Context, tool string, args ...string) *exec.Cmd {
	base := []string{"-h", "127.0.0.1", "-p", fmt.Sprint(m.port), "--cafile", m.certs.ca,
		"-u", operatorAccount.Username, "-P", operatorAccount.Password, "-V", "mqttv311"}
	return exec.CommandContext(ctx, tool, append(base, args...)...)
}

func (m *mosquitto) clientTLS(t testing.TB) *tls.Config {
	cfg, err := brokerTLS(m.url(), m.tls())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
