package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/clock/clocktest"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/driver"
	"github.com/dualforce/dualforce/runtime/mqtt/mqtttest"
	"github.com/dualforce/dualforce/runtime/recorder"
	"github.com/dualforce/dualforce/skills"
)

// twoSkillBank is a locomotion bank with two latents of one constant-action policy: latent z
// adds z[0] to every mean, so latent 0 holds the default pose and latent 1 ("lean") bends FL_HFE.
func twoSkillBank(t testing.TB) *skills.Bank {
	t.Helper()
	l := skills.Locomotion48()
	c, err := skills.NewContract(l)
	if err != nil {
		t.Fatal(err)
	}
	const zdim = 1
	in := l.Dim() + zdim
	layer := skills.Dense{In: in, Out: 24, W: make([]float32, in*24), B: make([]float32, 24)}
	layer.W[1*in+l.Dim()] = 1 // FL_HFE's mean row reads the latent
	b := &skills.Bank{Producer: "app test", Contract: c, LatentDim: zdim, Slots: []skills.Slot{{Policy: skills.MLP{Layers: []skills.Dense{layer}}}}}
	for i, name := range []string{"still", "lean"} {
		b.Latents = append(b.Latents, skills.Latent{
			Info: skills.LatentInfo{Skill: 0, Iteration: i, Name: name, Tags: []string{name}, OfflinePsi: make([]float32, c.Features.Dim(l))},
			Z:    []float32{float32(i)},
		})
	}
	return b
}

func freeAddr(t testing.TB, network string) string {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.LocalAddr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor fails the test unless cond holds within limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(limit, cond) {
		t.Fatalf("%s: not within %v", what, limit)
	}
}

// poll checks cond every 5 ms until it holds (true) or limit has passed (false).
func poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// TestMain lets clocktest.KeepAwake start this test binary as its CPU spinner.
func TestMain(m *testing.M) { clocktest.Main(m) }

// The robot of the MQTT tests, and its topics.
const (
	testRobot = "solo-test"
	prefix    = "solo/v1/" + testRobot + "/"
)

// Real-time priority of the runtime and the emulated board, as on the robot: a 1 kHz loop of an
// ordinary process stalls for tens of ms on a loaded machine (hw/clock's measurements).
const testPriority = 20

// testConfig is the runtime's configuration for the emulated board (startHarness fills in the
// transport) with the two-skill bank, the embedded broker and a flight recorder in a temporary
// directory.
func testConfig(t testing.TB) config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.RobotID = testRobot
	cfg.Bank = filepath.Join(dir, "bank.npz")
	if err := skills.WriteBank(cfg.Bank, twoSkillBank(t)); err != nil {
		t.Fatal(err)
	}
	cfg.Calibration.Mode = config.CalibrationOffsets
	cfg.Slider.Enabled = false
	cfg.MQTT.Listen = freeAddr(t, "tcp")
	cfg.Metrics.Listen = ""
	cfg.Recorder.Dir = filepath.Join(dir, "rec")
	// These tests share two cores with the rest of the suite: the loop gets the most slack the
	// config accepts (a stall of 20 ms on a busy CI machine once latched link_timeout) instead of
	// asserting real-time behaviour here; the HIL tests measure that.
	cfg.Limits.LoopOverrunBudget = 19
	cfg.Limits.LinkTimeout = 50 * time.Millisecond
	return cfg
}

// externalBroker points cfg at mosquitto m with TLS and the robot's account in a credentials
// file only its owner may read.
func externalBroker(t testing.TB, cfg *config.Config, m *mqtttest.Mosquitto, robot mqtttest.Account) {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "mqtt-credentials")
	if err := os.WriteFile(creds, []byte(robot.Username+":"+robot.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.MQTT = config.MQTT{URL: m.URL(), CAFile: m.Certs.CA, CredentialsFile: creds}
}

// harness is the runtime under test: the emulated master board serving the UDP tunnel in real
// time (or, with Options.Board, an in-process board in lockstep), and the runtime's wiring
// (Start, Run) around it. It stops when the test ends. Tests watch the core as an operator
// does, through MQTT, and afterwards through its flight recording: the core's state snapshot
// has one reader, the MQTT adapter.
type harness struct {
	rt      *Runtime
	cfg     config.Config
	cancel  context.CancelFunc
	runDone chan error
	srvDone chan error
	timing  *driver.Timing
}

func startHarness(t testing.TB, cfg config.Config, opts Options) *harness {
	t.Helper()
	level := slog.LevelInfo
	if _, bench := t.(*testing.B); bench {
		level = slog.LevelWarn // a benchmark prints its log even when it passes
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
	if opts.Logger == nil {
		opts.Logger = log
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{cfg: cfg, cancel: cancel, runDone: make(chan error, 1), srvDone: make(chan error, 1)}
	if opts.Board != nil {
		h.cfg.Transport = config.Transport{Kind: config.TransportPipe}
		h.srvDone <- nil
	} else {
		// First, before any thread of this process is real-time: a VM's idle CPUs wake up late.
		clocktest.KeepAwake(t)
		boardConn, err := link.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		b := boardtest.FirstOrder(t, board.Config{})
		go func() {
			h.srvDone <- server.New(b, boardConn, server.Options{Priority: testPriority, Logger: log}).Run(ctx)
			boardConn.Close()
		}()
		h.cfg.Transport = config.Transport{Kind: config.TransportUDP, Addr: boardConn.Addr().String()}
		opts.RealtimePriority = testPriority
	}
	var err error
	if h.rt, err = Start(ctx, h.cfg, opts); err != nil {
		cancel()
		<-h.srvDone
		t.Fatal(err)
	}
	go func() { h.runDone <- h.rt.Run(ctx) }()
	t.Cleanup(func() { h.stop(t) })
	return h
}

// stop ends the run and returns the loop's timing record; later calls return the same.
func (h *harness) stop(t testing.TB) *driver.Timing {
	t.Helper()
	if h.timing != nil {
		return h.timing
	}
	h.cancel()
	if err := <-h.runDone; err != nil {
		t.Errorf("runtime: %v", err)
	}
	if err := <-h.srvDone; err != nil {
		t.Errorf("board server: %v", err)
	}
	h.timing = h.rt.Timing()
	return h.timing
}

// tickRecord is what the flight recorder kept of one link tick.
type tickRecord struct {
	index  uint64
	at     time.Time // stamped on the control thread after the tick's command went out
	fresh  bool      // a sensor packet arrived for this tick
	action []float32 // the policy's action on policy ticks while a skill runs, else nil
	events []recordedEvent
	// commands are the ids of the operator commands the core applied at this tick (its input
	// record's), heartbeats and other id-less commands left out.
	commands []string
}

// recordedEvent is one line of a tick's events (runtime/app's appendEvent).
type recordedEvent struct {
	Kind   string `json:"kind"`
	Fault  string `json:"fault"`
	Reason string `json:"reason"`
	Mode   string `json:"mode"`
	To     *int   `json:"to"`
	OK     *bool  `json:"ok"`
}

// recording reads the flight recording of a stopped harness.
func (h *harness) recording(t testing.TB) []tickRecord {
	t.Helper()
	return readRecording(t, h.cfg.Recorder.Dir)
}

// readRecording reads the flight recording in dir of a stopped runtime.
func readRecording(t testing.TB, dir string) []tickRecord {
	t.Helper()
	files, err := recorder.Recordings(dir, "")
	if err != nil || len(files) == 0 {
		t.Fatalf("recordings in %s: %v %v", dir, files, err)
	}
	var (
		ticks []tickRecord
		input core.InputRecord
	)
	for _, f := range files {
		r, err := recorder.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			tick, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			rec := tickRecord{index: tick.Index, at: time.Unix(0, tick.UnixNano), fresh: len(tick.Sensor) > 0}
			if len(tick.Action) > 0 {
				rec.action = append([]float32(nil), tick.Action...)
			}
			for line := range bytes.Lines(tick.Events) {
				var e recordedEvent
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatalf("tick %d: event %q: %v", tick.Index, line, err)
				}
				rec.events = append(rec.events, e)
			}
			if err := core.DecodeInputRecord(tick.Input, &input); err != nil {
				t.Fatalf("tick %d: input record: %v", tick.Index, err)
			}
			for _, c := range input.Commands {
				if c.ID != "" {
					rec.commands = append(rec.commands, c.ID)
				}
			}
			ticks = append(ticks, rec)
		}
		r.Close()
	}
	return ticks
}

// eventsOf returns the recorded events of kind, with the ticks that carried them.
func eventsOf(ticks []tickRecord, kind string) (events []recordedEvent, at []tickRecord) {
	for _, tk := range ticks {
		for _, e := range tk.events {
			if e.Kind == kind {
				events, at = append(events, e), append(at, tk)
			}
		}
	}
	return events, at
}

// Link period and the slack past it after which the driver counts a missed period.
const (
	linkPeriod = time.Millisecond
	missSlack  = linkPeriod / 2
)

// miss is a sensor packet that came late enough to count as missed periods.
type miss struct {
	at      time.Time
	periods int
}

// missedPeriods applies the real-time driver's rule (a packet more than period+slack after the
// previous one misses (gap-slack)/period periods) to the flight recording, which stamps every
// tick: unlike the driver's running total it says when each miss happened. The stamps are taken
// after the tick's command went out rather than at the packet's arrival, so a gap is off by the
// difference of two ticks' compute times (tens of µs). A tick the recorder dropped (its ring was
// full) leaves a hole across which no gap is measured; holes counts them.
func missedPeriods(ticks []tickRecord) (misses []miss, holes int) {
	var last tickRecord
	haveLast := false
	for i, tk := range ticks {
		if i > 0 && tk.index != ticks[i-1].index+1 {
			holes++
			haveLast = false
		}
		if !tk.fresh {
			continue
		}
		if haveLast {
			if gap := tk.at.Sub(last.at); gap > linkPeriod+missSlack {
				misses = append(misses, miss{at: tk.at, periods: int((gap - missSlack) / linkPeriod)})
			}
		}
		last, haveLast = tk, true
	}
	return misses, holes
}

// missedIn counts the missed periods of the packets that arrived in [from, to).
func missedIn(misses []miss, from, to time.Time) int {
	n := 0
	for _, m := range misses {
		if !m.at.Before(from) && m.at.Before(to) {
			n += m.periods
		}
	}
	return n
}

// operator is an MQTT client of the operator inside the test process. Unlike mosquitto_pub and
// mosquitto_sub it starts no process, which matters while the runtime's timing is measured (see
// mqtttest's prepareStandby). It records every message of its subscriptions with the time it
// arrived.
type operator struct {
	client paho.Client
	mu     sync.Mutex
	msgs   []operatorMessage
}

type operatorMessage struct {
	topic, payload string
	at             time.Time
}

// dialOperator connects to url as acct (tlsConfig nil for tcp://) and subscribes to filters at
// QoS 1.
func dialOperator(t testing.TB, url string, acct mqtttest.Account, tlsConfig *tls.Config, filters ...string) *operator {
	t.Helper()
	o := &operator{}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(fmt.Sprintf("test-op-%d", time.Now().UnixNano())).
		SetUsername(acct.Username).SetPassword(acct.Password).SetTLSConfig(tlsConfig).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false)
	o.client = paho.NewClient(opts)
	if tok := o.client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("operator connecting to %s: %v", url, tok.Error())
	}
	t.Cleanup(func() { o.client.Disconnect(0) })
	for _, f := range filters {
		tok := o.client.Subscribe(f, 1, func(_ paho.Client, m paho.Message) {
			at := time.Now()
			o.mu.Lock()
			o.msgs = append(o.msgs, operatorMessage{m.Topic(), string(m.Payload()), at})
			o.mu.Unlock()
		})
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("operator subscribing to %s: %v", f, tok.Error())
		}
	}
	return o
}

// publish sends payload at QoS 1 and waits for the broker's acknowledgement.
func (o *operator) publish(t testing.TB, topic string, payload []byte) {
	t.Helper()
	if tok := o.client.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publishing to %s: %v", topic, tok.Error())
	}
}

// waitFor returns the first message on topic whose payload holds every one of parts. When none
// arrives in time, the failure lists what did arrive on the topic.
func (o *operator) waitFor(t testing.TB, within time.Duration, topic string, parts ...string) operatorMessage {
	t.Helper()
	var found operatorMessage
	if !poll(within, func() (ok bool) { found, ok = o.find(topic, parts); return ok }) {
		t.Fatalf("a message on %s with %q: not within %v; the topic's messages: %s", topic, parts, within, o.seen(topic))
	}
	return found
}

// find is the first message on topic whose payload holds every one of parts.
func (o *operator) find(topic string, parts []string) (operatorMessage, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
next:
	for _, m := range o.msgs {
		if m.topic != topic {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(m.payload, p) {
				continue next
			}
		}
		return m, true
	}
	return operatorMessage{}, false
}

// seen lists the messages received on topic with their times, for a failure message.
func (o *operator) seen(topic string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var got []string
	for _, m := range o.msgs {
		if m.topic == topic {
			got = append(got, m.at.Format("15:04:05.000")+" "+m.payload)
		}
	}
	if len(got) == 0 {
		return "none"
	}
	return strings.Join(got, "; ")
}

// commandPayload builds a command: id, issued_at, expires_in_ms, reply_to (when set) and the
// command's own JSON fields.
func commandPayload(id string, issued time.Time, ttl time.Duration, replyTo, fields string) []byte {
	p := fmt.Sprintf(`{"id":%q,"issued_at":%q,"expires_in_ms":%d`, id, issued.UTC().Format(time.RFC3339Nano), ttl.Milliseconds())
	if replyTo != "" {
		p += fmt.Sprintf(`,"reply_to":%q`, replyTo)
	}
	return []byte(p + "," + fields + "}")
}
