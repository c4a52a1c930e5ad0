package mqtttest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"
)

// The harness itself: TLS with the generated CA, password accounts, the
// documented ACL, subscriptions that see live and retained messages, and a
// kill and restart on the same port that forgets everything.
func TestMosquittoHarness(t *testing.T) {
	robot := Robot("r1")
	m := Start(t, Options{Accounts: []Account{robot, Operator}})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port()))
	conn, err := tls.Dial("tcp", addr, m.Certs.ClientTLS(t))
	if err != nil {
		t.Fatalf("TLS to mosquitto with the test CA: %v", err)
	}
	conn.Close()

	state := "solo/v1/r1/state/mode"
	sub := m.Subscribe(t, Operator, "solo/v1/r1/#")
	m.Publish(t, robot, state, []byte(`{"mode":"stand"}`), "-r")
	got := sub.WaitFor(t, 5*time.Second, "the robot's state", Containing(`"stand"`))
	if got.Topic != state || got.Retained {
		t.Fatalf("live delivery %+v", got)
	}
	if r := m.Retained(t, Operator, state); r != `{"mode":"stand"}` {
		t.Fatalf("retained %q", r)
	}
	// The ACL: an operator may not publish a robot's state (mosquitto drops
	// it silently under MQTT 3.1.1), and the robot may not command itself.
	commands := m.Subscribe(t, robot, "solo/v1/r1/cmd/#")
	m.Publish(t, Operator, state, []byte(`{"mode":"forged"}`))
	m.Publish(t, robot, "solo/v1/r1/cmd/mode", []byte(`{"mode":"forged"}`))
	m.Publish(t, Operator, "solo/v1/r1/cmd/mode", []byte(`{"mode":"run"}`))
	m.Publish(t, robot, state, []byte(`{"mode":"run"}`), "-r")
	commands.WaitFor(t, 5*time.Second, "the operator's command", Containing(`"run"`))
	sub.WaitFor(t, 5*time.Second, "the robot's next state", Containing(`"run"`))
	if n := sub.Count(Containing("forged")) + commands.Count(Containing("forged")); n != 0 {
		t.Fatalf("%d messages the ACL forbids got through", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Command(ctx, Account{"op", "wrong"}, "mosquitto_pub", "-t", "x", "-m", "x").Run(); err == nil {
		t.Fatal("a wrong password got in")
	}

	m.Kill()
	if err := m.Command(ctx, Operator, "mosquitto_pub", "-t", "x", "-m", "x").Run(); err == nil {
		t.Fatal("published to a killed broker")
	}
	m.Restart()
	if m.Port() != mustPort(t, m.URL()) {
		t.Fatalf("URL %s does not name port %d", m.URL(), m.Port())
	}
	if r := m.Retained(t, Operator, state); r != "" {
		t.Fatalf("a restarted broker still holds %q", r)
	}
	after := m.Subscribe(t, Operator, "solo/v1/r1/#")
	m.Publish(t, robot, state, []byte(`{"mode":"damp"}`), "-r")
	after.WaitFor(t, 5*time.Second, "state after the restart", Containing(`"damp"`))

	// Restart kills a running broker first; it wakes a prepared one or starts a new one.
	for _, prepared := range []bool{true, false} {
		if prepared {
			m.PrepareRestart()
		}
		m.Restart()
		mode := fmt.Sprintf(`{"mode":"stop","prepared":%v}`, prepared)
		m.Publish(t, robot, state, []byte(mode), "-r")
		if r := m.Retained(t, Operator, state); r != mode {
			t.Fatalf("restart (prepared %v): retained %q", prepared, r)
		}
	}
}

func mustPort(t *testing.T, url string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(url[len("ssl://"):])
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
