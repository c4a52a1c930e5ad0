package mqtt

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// retainedOn runs mosquitto_sub for the broker's retained copy of topic and
// returns it, or "" if there is none.
func (m *mosquitto) retainedOn(t testing.TB, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := m.client(ctx, "mosquitto_sub", "-t", topic, "--retained-only", "-C", "1", "-W", "1").Output()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("mosquitto_sub %s: %v", topic, err)
	}
	return strings.TrimSpace(string(out))
}

// watchLines runs mosquitto_sub on topic and reports whether a line holding
// want shows up before the deadline. It subscribes to retained too, a topic
// holding a retained message: that message's arrival proves the subscription
// is in place, which is when ready closes.
func (m *mosquitto) watchLines(t testing.TB, topic, retained, want string) (ready <-chan struct{}, found <-chan bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cmd := m.client(ctx, "mosquitto_sub", "-t", topic, "-t", retained, "-q", "1", "-v")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The subscriber runs until the want line or the deadline; when the test ends first, the
	// cleanup kills it, so no mosquitto_sub outlives the test binary.
	t.Cleanup(cancel)
	readyCh, foundCh := make(chan struct{}), make(chan bool, 1)
	go func() {
		defer func() {
			cancel()
			_ = cmd.Wait()
		}()
		subscribed := false
		defer func() {
			if !subscribed {
				close(readyCh)
			}
		}()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if !subscribed && strings.HasPrefix(line, retained+" ") {
				subscribed = true
				close(readyCh)
			}
			if strings.HasPrefix(line, topic+" ") && strings.Contains(line, want) {
				foundCh <- true
				return
			}
		}
		foundCh <- false
	}()
	return readyCh, foundCh
}

// mosquitto_pub sends a skill command through a real mosquitto with TLS,
// passwords and the documented ACL; the core receives it validated, and
// mosquitto_sub sees the retained state and the event.
func TestMosquittoCommandLineClients(t *testing.T) {
	m := startMosquitto(t)
	topics, _ := NewTopics(testRobot)
	core := newFakeCore()
	startAdapter(t, Config{Broker: m.url(), Credentials: robotAccount, TLS: m.tls()}, core)
	eventually(t, 10*time.Second, "retained online", func() bool {
		return m.retainedOn(t, topics.Topic(TopicConnection)) == ConnectionOnline
	})
	if bank := m.retainedOn(t, topics.Topic(TopicBank)); !strings.Contains(bank, `"name":"bound"`) {
		t.Fatalf("retained state/bank %s", bank)
	}

	ready, found := m.watchLines(t, topics.Topic(TopicEvents), topics.Topic(TopicConnection), `"type":"skill_switch"`)
	<-ready
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payload := command(map[string]any{"id": "cli-1", "select": map[string]any{"tag": "fast"}})
	if out, err := m.client(ctx, "mosquitto_pub", "-t", topics.Command(RouteSkill), "-q", "1", "-m", string(payload)).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub: %v: %s", err, out)
	}
	eventually(t, 5*time.Second, "the core to apply the command", func() bool { return len(core.appliedCommands()) == 1 })
	got := core.appliedCommands()[0]
	if got.Kind != corebus.KindSkill || got.ID != "cli-1" || got.Skill.By != corebus.SelectByTag || got.Skill.Index != 1 || got.Skill.Generation != 1 {
		t.Fatalf("core got %+v", got)
	}
	if !<-found {
		t.Fatal("mosquitto_sub did not see the skill_switch event")
	}
	eventually(t, 5*time.Second, "retained state/skill bound", func() bool {
		return strings.Contains(m.retainedOn(t, topics.Topic(TopicSkill)), `"name":"bound"`)
	})

	// A retained command through mosquitto: rejected, nothing reaches the core.
	ready, found = m.watchLines(t, topics.Topic(TopicEvents), topics.Topic(TopicConnection), `"code":"retained"`)
	<-ready
	retained := command(map[string]any{"id": "cli-retained", "mode": "run", "expires_in_ms": 60000})
	if out, err := m.client(ctx, "mosquitto_pub", "-t", topics.Command(RouteMode), "-q", "1", "-r", "-m", string(retained)).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub -r: %v: %s", err, out)
	}
	// Live delivery strips the retain flag (MQTT 3.1.1), so the robot sees
	// the broker's retained copy when it next subscribes: force that by
	// cutting its connection with a client-id takeover.
	takeover := exec.CommandContext(ctx, "mosquitto_sub", "-h", "127.0.0.1", "-p", fmt.Sprint(m.port), "--cafile", m.certs.ca,
		"-u", robotAccount.Username, "-P", robotAccount.Password, "-i", "solo-"+testRobot, "-t", "none", "-C", "1", "-W", "1")
	_ = takeover.Run()
	if !<-found {
		t.Fatal("no rejection event for the retained command")
	}
	applied := core.appliedCommands()
	if len(applied) != 2 || applied[1].ID != "cli-retained" {
		t.Fatalf("core applied %d commands, want cli-1 and the live delivery of cli-retained only", len(applied))
	}
}

// Kill mosquitto mid-run: the core's side never blocks, the adapter comes
// back when mosquitto restarts on the same port, republishes its retained
// state into the empty broker, and replays nothing.
func TestMosquittoOutage(t *testing.T) {
	m := startMosquitto(t)
	topics, _ := NewTopics(testRobot)
	core := newFakeCore()
	var maxCoreCall atomic.Int64
	core.measure = func(d time.Duration) {
		for old := maxCoreCall.Load(); int64(d) > old && !maxCoreCall.CompareAndSwap(old, int64(d)); old = maxCoreCall.Load() {
		}
	}
	startAdapter(t, Config{Broker: m.url(), Credentials: robotAccount, TLS: m.tls(),
		Backoff: Backoff{Min: 50 * time.Millisecond, Max: 400 * time.Millisecond}}, core)
	eventually(t, 10*time.Second, "retained online", func() bool {
		return m.retainedOn(t, topics.Topic(TopicConnection)) == ConnectionOnline
	})
	op := rawClient(t, m.url(), operatorAccount, m.clientTLS(t))
	publish(t, op, topics.Command(RouteMode), false, command(map[string]any{"id": "before", "mode": "run"}))
	eventually(t, 5*time.Second, "the first command", func() bool { return len(core.appliedCommands()) == 1 })
	op.Disconnect(0)

	m.kill()
	// While the broker is down the core keeps reporting: events pile up
	// in its ring and then drop, state keeps being stored. Time every call.
	maxCoreCall.Store(0)
	var maxEmit time.Duration
	ev := corebus.Event{Kind: corebus.EventFault, Fault: "test", Reason: "outage"}
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); {
		start := time.Now()
		core.events.Offer(ev)
		maxEmit = max(maxEmit, time.Since(start))
		time.Sleep(100 * time.Microsecond)
	}
	t.Logf("broker down: longest event emit %v, longest whole policy tick (drain commands, emit events, store state) %v, events dropped %d",
		maxEmit, time.Duration(maxCoreCall.Load()), core.events.Dropped())
	if maxEmit > time.Second || time.Duration(maxCoreCall.Load()) > time.Second {
		t.Fatal("a core-side call blocked on the dead broker")
	}
	if core.events.Dropped() == 0 {
		t.Fatal("the event ring never filled: the test did not exercise dropping")
	}

	m.start()
	eventually(t, 10*time.Second, "retained online after the restart", func() bool {
		return m.retainedOn(t, topics.Topic(TopicConnection)) == ConnectionOnline
	})
	for _, suffix := range []string{TopicMode, TopicSkill, TopicBank} {
		eventually(t, 5*time.Second, suffix+" republished", func() bool { return m.retainedOn(t, topics.Topic(suffix)) != "" })
	}
	if mode := m.retainedOn(t, topics.Topic(TopicMode)); !strings.Contains(mode, `"mode":"run"`) {
		t.Fatalf("republished state/mode %s", mode)
	}

	op = rawClient(t, m.url(), operatorAccount, m.clientTLS(t))
	events := subscribe(t, op, topics.Topic(TopicEvents))
	expired := command(map[string]any{"id": "stale", "mode": "damp", "issued_at": time.Now().Add(-10 * time.Second).UTC().Format(time.RFC3339Nano), "expires_in_ms": 2000})
	publish(t, op, topics.Command(RouteMode), false, expired)
	events.waitFor(t, "the expired command's rejection", onTopic(topics.Topic(TopicEvents), `"id":"stale"`, `"code":"expired"`))
	publish(t, op, topics.Command(RouteMode), false, command(map[string]any{"id": "after", "mode": "stand"}))
	eventually(t, 5*time.Second, "the command after the restart", func() bool { return len(core.appliedCommands()) == 2 })
	if got := core.appliedCommands(); got[0].ID != "before" || got[1].ID != "after" {
		t.Fatalf("core applied %s then %s", got[0].ID, got[1].ID)
	}
}
