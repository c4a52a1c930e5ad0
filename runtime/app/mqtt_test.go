package app

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
)

// reply waits for the reply to command id on sub and decodes it.
func reply(t *testing.T, sub *mqtttest.Subscription, id string) (ok bool, errText string) {
	t.Helper()
	m := sub.WaitFor(t, 10*time.Second, "the reply to "+id, mqtttest.Containing(`"id":"`+id+`"`))
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(m.Payload), &r); err != nil {
		t.Fatalf("reply %s: %v", m.Payload, err)
	}
	return r.OK, r.Error
}

// rejectedWith waits for a command_rejected event carrying every one of parts and returns its
// error text.
func rejectedWith(t *testing.T, events *mqtttest.Subscription, parts ...string) string {
	t.Helper()
	m := events.WaitFor(t, 10*time.Second, "the rejection "+strings.Join(parts, " "),
		mqtttest.Containing(append([]string{`"type":"command_rejected"`}, parts...)...))
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(m.Payload), &e); err != nil || e.Error == "" {
		t.Fatalf("rejection without a reason: %s (%v)", m.Payload, err)
	}
	return e.Error
}

// The runtime against an external mosquitto with TLS, password accounts and the documented ACL,
// driven by the operator's command-line tools: mosquitto_pub switches the skill and the next
// policy tick runs it; mosquitto_sub sees the events and, late, the retained state. A retained
// command, an expired one and malformed ones are refused with a reason (reply and event) and
// change nothing on the core, as its flight recording shows.
//
// The runtime drives its simulated board in lockstep (Options.Board), as the fleet test does:
// every mosquitto client the test starts is a fork of this process, and a fork stalls a
// real-time process's other threads (mqtttest.PrepareRestart's measurement: 3 to 15 missed
// periods each), which in 2 of 5 fresh-clone suite runs added up to the core's 20 ms link
// timeout and a fault that has nothing to do with MQTT. Lockstep cannot miss a period; the
// broker, the clients and the commands' deadlines live in wall time as deployed.
func TestRuntimeExternalMosquitto(t *testing.T) {
	robot, op := mqtttest.Robot(testRobot), mqtttest.Operator
	m := mqtttest.Start(t, mqtttest.Options{Accounts: []mqtttest.Account{robot, op}})
	cfg := testConfig(t)
	externalBroker(t, &cfg, m, robot)
	replyTo := prefix + "reply/cli"
	events := m.Subscribe(t, op, prefix+"events")
	replies := m.Subscribe(t, op, replyTo)

	// A retained command waits on the broker before the robot connects: the robot gets the
	// broker's stored copy when it subscribes (MQTT 3.1.1 clears the flag on live delivery,
	// so this is the case the robot can recognise).
	m.Publish(t, op, prefix+"cmd/mode", commandPayload("retained-1", time.Now(), time.Minute, replyTo, `"mode":"damp"`), "-r")
	h := startHarness(t, cfg, Options{Board: boardtest.FirstOrder(t, board.Config{})})
	if ok, why := reply(t, replies, "retained-1"); ok || !strings.Contains(why, "retained") {
		t.Fatalf("retained command: ok %v, error %q", ok, why)
	}
	t.Logf("retained command refused: %s", rejectedWith(t, events, `"id":"retained-1"`, `"code":"retained"`))

	events.WaitFor(t, 15*time.Second, "the robot standing", mqtttest.Containing(`"type":"mode_change"`, `"reason":"standing"`))
	m.Publish(t, op, prefix+"cmd/mode", commandPayload("run-1", time.Now(), 5*time.Second, replyTo, `"mode":"run"`))
	if ok, why := reply(t, replies, "run-1"); !ok {
		t.Fatalf("mode run refused: %s", why)
	}
	m.Publish(t, op, prefix+"cmd/skill", commandPayload("skill-1", time.Now(), 5*time.Second, replyTo, `"select":{"name":"lean"}`))
	if ok, why := reply(t, replies, "skill-1"); !ok {
		t.Fatalf("skill switch refused: %s", why)
	}
	events.WaitFor(t, 5*time.Second, "the skill switch", mqtttest.Containing(`"type":"skill_switch"`, `"name":"lean"`))
	// Late subscribers get the truth from the broker's retained copies.
	for topic, want := range map[string]string{"state/connection": `"online"`, "state/mode": `"mode":"run"`, "state/skill": `"name":"lean"`} {
		if got := m.Retained(t, op, prefix+topic); !strings.Contains(got, want) {
			t.Fatalf("retained %s = %q, want %s", topic, got, want)
		}
	}

	// Refused before they reach the core: each is answered on reply_to when the payload is
	// readable enough to name it, and reported on events.
	m.Publish(t, op, prefix+"cmd/skill", commandPayload("expired-1", time.Now().Add(-10*time.Second), 2*time.Second, replyTo, `"select":{"name":"still"}`))
	if ok, why := reply(t, replies, "expired-1"); ok || !strings.Contains(why, "expired") {
		t.Fatalf("expired command: ok %v, error %q", ok, why)
	}
	t.Logf("expired command refused: %s", rejectedWith(t, events, `"id":"expired-1"`, `"code":"expired"`))
	m.Publish(t, op, prefix+"cmd/skill", commandPayload("typed-1", time.Now(), 5*time.Second, replyTo, `"select":{"index":"still"}`))
	if ok, why := reply(t, replies, "typed-1"); ok || !strings.Contains(why, "malformed") {
		t.Fatalf("wrongly typed command: ok %v, error %q", ok, why)
	}
	t.Logf("wrongly typed command refused: %s", rejectedWith(t, events, `"id":"typed-1"`, `"code":"malformed"`))
	// Not JSON at all: no id or reply_to can be read, so the event is the only answer.
	m.Publish(t, op, prefix+"cmd/mode", []byte(`{"id":"cut-1","mode":"damp"`))
	t.Logf("truncated JSON refused: %s", rejectedWith(t, events, `"command":"mode"`, `"code":"malformed"`))
	for topic, want := range map[string]string{"state/mode": `"mode":"run"`, "state/skill": `"name":"lean"`} {
		if got := m.Retained(t, op, prefix+topic); !strings.Contains(got, want) {
			t.Fatalf("after the refused commands %s = %q, want %s", topic, got, want)
		}
	}

	h.stop(t)
	ticks := h.recording(t)
	done, _ := eventsOf(ticks, "command_done")
	if len(done) != 2 {
		t.Fatalf("the core applied %d commands, want 2 (run and the skill switch): refused ones reached it", len(done))
	}
	for _, kind := range []string{"fault", "bank_load"} {
		if ev, _ := eventsOf(ticks, kind); len(ev) != 0 {
			t.Fatalf("%s events %+v", kind, ev)
		}
	}
	modes, _ := eventsOf(ticks, "mode_change")
	for _, e := range modes {
		if e.Mode != "stand" && e.Mode != "run" {
			t.Fatalf("mode went to %s (%s): a refused command acted", e.Mode, e.Reason)
		}
	}
	switches, at := eventsOf(ticks, "skill_switch")
	if len(switches) != 1 || switches[0].To == nil || *switches[0].To != 1 {
		t.Fatalf("skill switches %+v, want one to the lean skill", switches)
	}
	// The switch happened at a policy tick, and that tick's policy step already ran the lean
	// skill: its FL_HFE action is the latent (1 through the action transform), where the policy
	// tick before had the still skill's 0.
	sw := at[0]
	if sw.action == nil {
		t.Fatalf("the skill switched at tick %d, which ran no policy step", sw.index)
	}
	var before *tickRecord
	for i := range ticks {
		if ticks[i].index < sw.index && ticks[i].action != nil {
			before = &ticks[i]
		}
	}
	if before == nil || math.Abs(float64(before.action[1])) > 1e-6 || sw.action[1] < 0.5 {
		t.Fatalf("FL_HFE action %v at the switch (tick %d), %v at the policy tick before", sw.action[1], sw.index, before)
	}
	t.Logf("skill switched at policy tick %d (FL_HFE action %.3f, %.3f one policy tick earlier at %d)", sw.index, sw.action[1], before.action[1], before.index)
}
