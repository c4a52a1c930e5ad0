package mqtt

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

func TestBackoffDoublesWithJitterUpToMax(t *testing.T) {
	b := backoff{Backoff: Backoff{Min: 100 * time.Millisecond, Max: time.Second}}
	for i, ceiling := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceiling *= time.Millisecond
		if i >= 4 {
			ceiling = time.Second
		}
		if w := b.wait(); w < ceiling/2 || w > ceiling {
			t.Fatalf("wait %d = %v, want in [%v, %v]", i, w, ceiling/2, ceiling)
		}
	}
	b.reset()
	if w := b.wait(); w > 100*time.Millisecond {
		t.Fatalf("after reset wait = %v", w)
	}
}

// The dead-man, on the fake clock: silence past the window sends one
// stand-still and an event, motion commands are refused until heartbeats
// resume, and a full core queue is retried.
func TestDeadman(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core := newFakeCore()
		a, err := New(Config{RobotID: testRobot, Broker: "tcp://127.0.0.1:1", Heartbeat: 300 * time.Millisecond, Logger: quietLog}, core)
		if err != nil {
			t.Fatal(err)
		}
		defer a.deadman.stop()
		heartbeat := func() {
			a.handle(RouteHeartbeat, command(map[string]any{"id": nil, "expires_in_ms": nil}), false, time.Now())
		}
		run := func() { a.handle(RouteMode, command(map[string]any{"mode": "run"}), false, time.Now()) }
		drain := func() (kinds []corebus.Kind) {
			var c corebus.Command
			for core.commands.Poll(&c) {
				kinds = append(kinds, c.Kind)
			}
			return kinds
		}
		outbox := func() (events []string) {
			var m message
			for a.outbox.Poll(&m) {
				events = append(events, string(m.payload))
			}
			return events
		}

		run() // no operator has ever sent a heartbeat
		if got := drain(); len(got) != 0 {
			t.Fatalf("run without a heartbeat reached the core: %v", got)
		}
		if ev := outbox(); len(ev) != 1 || !strings.Contains(ev[0], `"code":"operator_absent"`) {
			t.Fatalf("events %v", ev)
		}

		for range 5 { // heartbeats every 200 ms keep the operator present
			heartbeat()
			time.Sleep(200 * time.Millisecond)
		}
		run()
		if got := drain(); len(got) != 6 || got[5] != corebus.KindMode {
			t.Fatalf("core got %v, want 5 heartbeats and the run", got)
		}
		if ev := outbox(); len(ev) != 0 {
			t.Fatalf("unexpected events %v", ev)
		}

		time.Sleep(250 * time.Millisecond) // 450 ms since the last heartbeat
		synctest.Wait()
		if got := drain(); len(got) != 1 || got[0] != corebus.KindStandStill {
			t.Fatalf("after silence the core got %v, want one stand-still", got)
		}
		if ev := outbox(); len(ev) != 1 || !strings.Contains(ev[0], `"type":"deadman"`) {
			t.Fatalf("events %v", ev)
		}
		time.Sleep(time.Second)
		if got := drain(); len(got) != 0 {
			t.Fatalf("stand-still repeated: %v", got)
		}
		run()
		if got := drain(); len(got) != 0 {
			t.Fatalf("run after silence reached the core: %v", got)
		}
		outbox()

		// A full queue when the dead-man fires: it retries until there is room.
		heartbeat()
		for core.commands.Offer(corebus.Command{Kind: corebus.KindHeartbeat}) {
		}
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		drain()
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if got := drain(); len(got) != 1 || got[0] != corebus.KindStandStill {
			t.Fatalf("after the queue emptied the core got %v, want one stand-still", got)
		}
	})
}
