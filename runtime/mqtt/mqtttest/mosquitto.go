package mqtttest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Account is an MQTT username and password. It converts to
// mqtt.Credentials, which has the same fields.
type Account struct {
	Username, Password string
}

// Operator is the account the default ACL lets command every robot and read
// its state, telemetry, events and replies (its "user op" block).
var Operator = Account{Username: "op", Password: "op-pass"}

// Robot is the account of robot robotID: the default ACL keys a robot's
// topics on its username, so the username is the robot id.
func Robot(robotID string) Account { return Account{Username: robotID, Password: "robot-pass"} }

// Options configure Start.
type Options struct {
	// Accounts go into the password file; mosquitto refuses anonymous
	// clients.
	Accounts []Account
	// ACLFile is mosquitto's acl_file; empty means runtime/mqtt's
	// documented testdata/mosquitto.acl.
	ACLFile string
}

// Mosquitto is a real mosquitto broker listening with TLS on a loopback
// port it keeps across Kill and Restart. It is killed when the test ends,
// and its log is printed if the test failed.
type Mosquitto struct {
	Certs Certs

	t       testing.TB
	port    int
	conf    string
	log     *os.File
	broker  *process // nil while killed
	standby *standby // the broker the next Restart starts, nil once used
}

// process is a started child and a channel closed once it has exited.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// standby is a shell that waits for a line on its stdin and then execs
// mosquitto in its own place.
type standby struct {
	*process
	stdin io.WriteCloser
}

// Tools are the binaries Start needs (Debian packages mosquitto,
// mosquitto-clients, coreutils and util-linux): stdbuf makes mosquitto_sub
// write each line as it happens rather than when its stdio buffer fills,
// and chrt runs every process the harness starts under ordinary scheduling.
var Tools = []string{"mosquitto", "mosquitto_passwd", "mosquitto_pub", "mosquitto_sub", "stdbuf", "chrt"}

// ordinary runs a program under SCHED_OTHER. A child inherits its parent's
// scheduling policy, and a test of the runtime makes its whole process
// SCHED_FIFO (hw/clock.RealtimeProcess): without this the broker and the
// operator's tools would compete with the control loop at its own
// priority, which they never do on a robot.
func ordinary(ctx context.Context, program string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "chrt", append([]string{"--other", "0", program}, args...)...)
}

// SkipWithoutTools skips the test unless every binary in Tools is installed.
func SkipWithoutTools(t testing.TB) {
	t.Helper()
	for _, bin := range Tools {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (apt-get install mosquitto mosquitto-clients coreutils util-linux): %v", bin, err)
		}
	}
}

// Start runs mosquitto on a free loopback port, or skips the test when the
// binaries are missing.
func Start(t testing.TB, opts Options) *Mosquitto {
	t.Helper()
	SkipWithoutTools(t)
	if len(opts.Accounts) == 0 {
		t.Fatal("mqtttest: Start needs at least one account")
	}
	acl := opts.ACLFile
	if acl == "" {
		acl = defaultACL(t)
	}
	dir := t.TempDir()
	m := &Mosquitto{Certs: NewCerts(t), t: t, port: freePort(t), conf: filepath.Join(dir, "mosquitto.conf")}
	passwd := filepath.Join(dir, "passwd")
	for i, a := range opts.Accounts {
		args := []string{"-b", passwd, a.Username, a.Password}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := ordinary(context.Background(), "mosquitto_passwd", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v: %s", err, out)
		}
	}
	// per_listener_settings false: the password file and ACL apply to the
	// one listener. persistence false: a killed broker forgets everything,
	// retained messages included, as a crashed broker without a database
	// would. set_tcp_nodelay: without it Nagle's algorithm adds
	// milliseconds to the p99 of small QoS 1 messages.
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
`, passwd, acl, m.port, m.Certs.CA, m.Certs.Cert, m.Certs.Key)
	if err := os.WriteFile(m.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if m.log, err = os.Create(filepath.Join(dir, "mosquitto.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Kill()
		if sb := m.standby; sb != nil {
			sb.stdin.Close() // its read fails and it exits
			<-sb.exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(m.log.Name())
			t.Logf("mosquitto log:\n%s", out)
		}
		m.log.Close()
	})
	m.Restart()
	m.PrepareRestart()
	return m
}

// defaultACL finds runtime/mqtt/testdata/mosquitto.acl next to this
// package's source, which a test binary always has.
func defaultACL(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("mqtttest: cannot locate its own source to find the default ACL; set Options.ACLFile")
	}
	acl := filepath.Join(filepath.Dir(file), "..", "testdata", "mosquitto.acl")
	if _, err := os.Stat(acl); err != nil {
		t.Fatalf("mqtttest: default ACL: %v; set Options.ACLFile", err)
	}
	return acl
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

// Port is the port mosquitto listens on, the same after every Restart.
func (m *Mosquitto) Port() int { return m.port }

// URL is the broker's address for Go clients.
func (m *Mosquitto) URL() string { return fmt.Sprintf("ssl://127.0.0.1:%d", m.port) }

// PID is the running broker's process id, for its CPU accounting; 0 while it is killed.
func (m *Mosquitto) PID() int {
	if m.broker == nil {
		return 0
	}
	return m.broker.cmd.Process.Pid
}

// start runs a program under ordinary scheduling with its output in the
// broker's log.
func (m *Mosquitto) start(stdin bool, program string, args ...string) (*process, io.WriteCloser) {
	m.t.Helper()
	cmd := ordinary(context.Background(), program, args...)
	cmd.Stdout, cmd.Stderr = m.log, m.log
	var in io.WriteCloser
	if stdin {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("starting %s: %v", program, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, in
}

// PrepareRestart starts the broker process the next Restart wakes, so
// that Restart itself starts no process; Start calls it once. Forking from
// a process that runs real-time (hw/clock.RealtimeProcess) stalls its
// other threads: measured here, each process a runtime test started cost
// its 1 kHz control loop 3 to 15 missed periods, which a test of the
// loop's timing through a broker outage must not mistake for the outage's
// doing.
func (m *Mosquitto) PrepareRestart() {
	m.t.Helper()
	if m.standby != nil {
		return
	}
	// chrt and then sh exec in place, so the process is the broker once it runs.
	p, in := m.start(true, "sh", "-c", `read go && exec mosquitto -c "$0"`, m.conf)
	m.standby = &standby{process: p, stdin: in}
}

// Restart starts mosquitto, on the same port as before, and returns once it
// accepts connections; it kills a running one first. It wakes the broker
// PrepareRestart started if there is one, and starts a new process
// otherwise.
func (m *Mosquitto) Restart() {
	m.t.Helper()
	m.Kill()
	if sb := m.standby; sb != nil {
		m.standby = nil
		if _, err := io.WriteString(sb.stdin, "go\n"); err != nil {
			m.t.Fatalf("waking the standby mosquitto: %v", err)
		}
		sb.stdin.Close()
		m.broker = sb.process
	} else {
		// chrt execs mosquitto in its place, so killing the process kills the broker.
		m.broker, _ = m.start(false, "mosquitto", "-c", m.conf)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port))
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-m.broker.exited:
			m.broker = nil
			out, _ := os.ReadFile(m.log.Name())
			m.t.Fatalf("mosquitto exited at start:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mosquitto not listening on %s within 5 s", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Kill stops mosquitto the hard way (SIGKILL), as a crash or a power loss
// would, and waits for it to be gone. It does nothing if none runs.
func (m *Mosquitto) Kill() {
	if m.broker == nil {
		return
	}
	_ = m.broker.cmd.Process.Kill()
	<-m.broker.exited
	m.broker = nil
}

// Command prepares mosquitto_pub or mosquitto_sub (tool) to talk to the
// broker over TLS, MQTT 3.1.1, as account as, under ordinary scheduling;
// args follow the connection options.
func (m *Mosquitto) Command(ctx context.Context, as Account, tool string, args ...string) *exec.Cmd {
	return ordinary(ctx, tool, m.clientArgs(as, args)...)
}

func (m *Mosquitto) clientArgs(as Account, args []string) []string {
	base := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(m.port), "--cafile", m.Certs.CA,
		"-u", as.Username, "-P", as.Password, "-V", "mqttv311"}
	return append(base, args...)
}

// Publish sends payload to topic with mosquitto_pub at QoS 1 as account as;
// extra arguments (e.g. "-r") follow. It fails the test if mosquitto_pub
// does.
func (m *Mosquitto) Publish(t testing.TB, as Account, topic string, payload []byte, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append([]string{"-q", "1", "-t", topic, "-m", string(payload)}, extra...)
	if out, err := m.Command(ctx, as, "mosquitto_pub", args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub %s: %v: %s", topic, err, out)
	}
}

// Retained returns the broker's retained message on topic as a fresh
// mosquitto_sub sees it, or "" when there is none (or the broker is down).
func (m *Mosquitto) Retained(t testing.TB, as Account, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := m.Command(ctx, as, "mosquitto_sub", "-t", topic, "--retained-only", "-C", "1", "-W", "1").Output()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("mosquitto_sub %s: %v", topic, err)
	}
	return strings.TrimSpace(string(out))
}
