package mqtt

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// Config configures the adapter. Zero fields take the defaults noted.
type Config struct {
	RobotID     string
	Broker      string // tcp://host:port or ssl://host:port
	Credentials Credentials
	TLS         TLSFiles
	ClientID    string // "solo-<robot_id>"
	Limits      Limits // DefaultLimits(); if set, every field must be positive
	// BankDir is the only directory cmd/bank may load from; empty disables
	// cmd/bank.
	BankDir string
	// Heartbeat enables the operator dead-man: once an operator has sent a
	// heartbeat, silence longer than this window makes the robot stand
	// still, and run, velocity and goal commands are refused until
	// heartbeats resume. Zero disables it.
	Heartbeat       time.Duration
	TelemetryPeriod time.Duration // 100 ms (10 Hz)
	Backoff         Backoff       // 100 ms doubling to 5 s
	ConnectTimeout  time.Duration // 5 s
	Logger          *slog.Logger  // slog.Default()
}

// pollPeriod is how often the run loop looks for core events, replies and
// state changes: well under the 20 ms policy period.
const pollPeriod = 10 * time.Millisecond

// Adapter connects the runtime core to MQTT. Commands arrive on the paho
// client's goroutine, are validated and queued to the core; everything the
// core reports is picked up by the run loop, so no call from the core ever
// waits on the network.
type Adapter struct {
	cfg       Config
	topics    Topics
	tls       *tls.Config
	core      Core
	validator Validator
	log       *slog.Logger
	deadman   *deadman // nil when disabled

	// outbox holds the replies and events the adapter makes itself until
	// the run loop publishes them.
	outbox *corebus.Ring[message]
	recent recentIDs
	// recalls queues recall commands for offerRecalls: the core FRE-encodes a recall in the
	// offering goroutine (tens of ms), which must not be the one that delivers an e-stop.
	recalls chan corebus.Command

	commandsDropped atomic.Uint64
	publishDropped  atomic.Uint64
}

type message struct {
	topic   string
	payload []byte
	qos     byte
	retain  bool
}

// New checks cfg and returns an adapter for core. It does not connect: Run does.
func New(cfg Config, core Core) (*Adapter, error) {
	topics, err := NewTopics(cfg.RobotID)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := brokerTLS(cfg.Broker, cfg.TLS)
	if err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "solo-" + cfg.RobotID
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	if err := cfg.Limits.check(); err != nil {
		return nil, err
	}
	if cfg.BankDir != "" {
		if cfg.BankDir, err = filepath.Abs(cfg.BankDir); err != nil {
			return nil, fmt.Errorf("%w: bank directory: %w", ErrConfig, err)
		}
	}
	if cfg.Heartbeat < 0 || cfg.TelemetryPeriod < 0 || cfg.ConnectTimeout < 0 || cfg.Backoff.Min < 0 || cfg.Backoff.Max < cfg.Backoff.Min {
		return nil, fmt.Errorf("%w: negative duration or backoff max below min", ErrConfig)
	}
	if cfg.TelemetryPeriod == 0 {
		cfg.TelemetryPeriod = 100 * time.Millisecond
	}
	if cfg.Backoff == (Backoff{}) {
		cfg.Backoff = Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Adapter{
		cfg: cfg, topics: topics, tls: tlsConfig, core: core,
		validator: Validator{Topics: topics, Limits: cfg.Limits, Catalogue: core, BankDir: cfg.BankDir},
		log:       cfg.Logger.With("component", "mqtt", "robot", cfg.RobotID),
		outbox:    corebus.NewRing[message](256),
		recent:    newRecentIDs(256),
		recalls:   make(chan corebus.Command, recallQueue),
	}
	if cfg.Heartbeat > 0 {
		a.deadman = newDeadman(cfg.Heartbeat, a.operatorSilent)
	}
	return a, nil
}

// Run connects to the broker and serves until ctx is done, reconnecting
// with backoff whenever the broker is lost. On return it has published
// "offline" if it was connected.
func (a *Adapter) Run(ctx context.Context) {
	if a.deadman != nil {
		defer a.deadman.stop()
	}
	recalling := make(chan struct{})
	defer func() { <-recalling }()
	go func() {
		defer close(recalling)
		a.offerRecalls(ctx)
	}()
	st := &loopState{}
	bo := backoff{Backoff: a.cfg.Backoff}
	for {
		client, lost, err := a.connect(ctx)
		if err == nil {
			up := time.Now()
			a.serve(ctx, client, lost, st)
			if time.Since(up) > a.cfg.Backoff.Max {
				bo.reset()
			}
		}
		if ctx.Err() != nil {
			return
		}
		wait := bo.wait()
		if err != nil {
			a.log.Warn("broker unreachable", "broker", a.cfg.Broker, "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// connect makes one connection with a fresh client and a clean session: the
// broker keeps nothing for us between connections and the client keeps
// nothing either (forgetfulStore), so no command is ever replayed and no
// stale state is ever resent.
func (a *Adapter) connect(ctx context.Context) (paho.Client, <-chan error, error) {
	lost := make(chan error, 1)
	opts := paho.NewClientOptions().
		AddBroker(a.cfg.Broker).
		SetClientID(a.cfg.ClientID).
		SetUsername(a.cfg.Credentials.Username).
		SetPassword(a.cfg.Credentials.Password).
		SetTLSConfig(a.tls).
		SetProtocolVersion(4).
		SetCleanSession(true).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetStore(forgetfulStore{}).
		SetOrderMatters(true). // commands apply in the order sent
		SetConnectTimeout(a.cfg.ConnectTimeout).
		SetWriteTimeout(time.Second).
		SetKeepAlive(10*time.Second).
		SetPingTimeout(5*time.Second).
		SetBinaryWill(a.topics.Topic(TopicConnection), []byte(ConnectionLost), 1, true).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			select {
			case lost <- err:
			default:
			}
		})
	client := paho.NewClient(opts)
	if err := waitToken(ctx, client.Connect(), a.cfg.ConnectTimeout); err != nil {
		client.Disconnect(0) // abandons an attempt still in progress
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	sub := client.Subscribe(a.topics.CommandFilter(), 1, a.onMessage)
	err := waitToken(ctx, sub, a.cfg.ConnectTimeout)
	if err == nil {
		for filter, qos := range sub.(*paho.SubscribeToken).Result() {
			if qos > 2 {
				err = fmt.Errorf("broker refused the subscription to %s", filter)
			}
		}
	}
	if err != nil {
		client.Disconnect(0)
		return nil, nil, fmt.Errorf("subscribe: %w", err)
	}
	return client, lost, nil
}

func waitToken(ctx context.Context, tok paho.Token, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no answer from the broker within %v", timeout)
	}
}

// serve runs one connection until it is lost or ctx is done.
func (a *Adapter) serve(ctx context.Context, client paho.Client, lost <-chan error, st *loopState) {
	now := time.Now()
	a.log.Info("connected to broker", "broker", a.cfg.Broker)
	a.publish(client, message{a.topics.Topic(TopicConnection), []byte(ConnectionOnline), 1, true})
	if !st.lostAt.IsZero() {
		dropped, eventsDropped := a.publishDropped.Load(), a.core.EventsDropped()
		a.publishJSON(client, a.topics.Topic(TopicEvents), 1, false, Event{
			Time: now, Type: EventReconnected, OutageMS: now.Sub(st.lostAt).Milliseconds(),
			PublishDropped: dropped - st.publishDroppedAtLoss, EventsDropped: eventsDropped - st.eventsDroppedAtLoss,
		})
	}
	st.republish()
	a.flush(client, st, now)
	ticker := time.NewTicker(pollPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			tok := client.Publish(a.topics.Topic(TopicConnection), 1, true, []byte(ConnectionOffline))
			_ = waitToken(context.Background(), tok, time.Second)
			client.Disconnect(250)
			a.log.Info("disconnected from broker")
			return
		case err := <-lost:
			st.lostAt = time.Now()
			st.publishDroppedAtLoss, st.eventsDroppedAtLoss = a.publishDropped.Load(), a.core.EventsDropped()
			a.log.Warn("broker connection lost", "err", err)
			return
		case now := <-ticker.C:
			a.flush(client, st, now)
		}
	}
}

// loopState is what the run loop remembers across polls and connections.
type loopState struct {
	snap, prev                                corebus.Snapshot
	hasPrev                                   bool
	prevAt                                    time.Time
	mode                                      ModeState
	modeKey                                   modeKey
	skillKey                                  skillKey
	skillSince                                time.Time
	bankGen                                   uint64
	bankSince                                 time.Time
	published                                 struct{ mode, skill, bank bool }
	nextTelemetry                             time.Time
	loopSeq, robotSeq                         uint64
	lostAt                                    time.Time
	publishDroppedAtLoss, eventsDroppedAtLoss uint64
}

type modeKey struct {
	mode  corebus.Mode
	estop bool
	fault string
}

type skillKey struct {
	skill      corebus.ActiveSkill
	generation uint64
}

// republish makes the next flush publish every retained state again, for a
// broker that may have lost it.
func (st *loopState) republish() {
	st.published.mode, st.published.skill, st.published.bank = false, false, false
}

// maxEventsPerPoll bounds the work of one poll so a flood of events cannot
// starve state and telemetry.
const maxEventsPerPoll = 256

func (a *Adapter) flush(client paho.Client, st *loopState, now time.Time) {
	if !client.IsConnectionOpen() {
		// The connection is going down: leave everything queued for the
		// next connection rather than drain it into the void.
		return
	}
	var msg message
	for range maxEventsPerPoll {
		if !a.outbox.Poll(&msg) {
			break
		}
		a.publish(client, msg)
	}
	haveSnap := a.core.LoadState(&st.snap)
	cat := a.core.Catalogue()
	var ev corebus.Event
	for range maxEventsPerPoll {
		if !a.core.PollEvent(&ev) {
			break
		}
		a.publishCoreEvent(client, &ev, st, cat, haveSnap, now)
	}
	a.publishState(client, st, cat, haveSnap, now)
	if haveSnap && !now.Before(st.nextTelemetry) {
		st.nextTelemetry = now.Add(a.cfg.TelemetryPeriod)
		a.publishTelemetry(client, st, now)
	}
}

func (a *Adapter) publishState(client paho.Client, st *loopState, cat *corebus.Catalogue, haveSnap bool, now time.Time) {
	var gen uint64
	if cat != nil {
		gen = cat.Generation
	}
	if !st.published.bank || gen != st.bankGen {
		if gen != st.bankGen || st.bankSince.IsZero() {
			st.bankGen, st.bankSince = gen, now
		}
		st.published.bank = a.publishJSON(client, a.topics.Topic(TopicBank), 1, true, bankState(cat, st.bankSince))
	}
	if !haveSnap {
		return
	}
	s := &st.snap
	if mk := (modeKey{s.Mode, s.EStop, s.Fault}); !st.published.mode || mk != st.modeKey {
		if mk != st.modeKey || st.mode.Since.IsZero() {
			st.modeKey = mk
			st.mode = ModeState{Mode: s.Mode.String(), EStop: s.EStop, Fault: s.Fault, Since: now}
		}
		st.published.mode = a.publishJSON(client, a.topics.Topic(TopicMode), 1, true, st.mode)
	}
	if sk := (skillKey{s.Skill, gen}); !st.published.skill || sk != st.skillKey {
		if sk != st.skillKey || st.skillSince.IsZero() {
			st.skillKey, st.skillSince = sk, now
		}
		st.published.skill = a.publishJSON(client, a.topics.Topic(TopicSkill), 1, true, SkillState{Skill: skillRef(s.Skill, cat), Since: st.skillSince})
	}
}

func (a *Adapter) publishTelemetry(client paho.Client, st *loopState, now time.Time) {
	s := &st.snap
	loopHz, policyHz := math.NaN(), math.NaN()
	if st.hasPrev {
		if dt := now.Sub(st.prevAt).Seconds(); dt > 0 {
			loopHz = float64(s.Loop.Ticks-st.prev.Loop.Ticks) / dt
			policyHz = float64(s.Loop.PolicyTicks-st.prev.Loop.PolicyTicks) / dt
		}
	}
	st.prev, st.prevAt, st.hasPrev = *s, now, true
	st.loopSeq++
	a.publishJSON(client, a.topics.Topic(TopicLoopTelemetry), 0, false, LoopTelemetry{
		Seq: st.loopSeq, Time: now,
		Ticks: s.Loop.Ticks, PolicyTicks: s.Loop.PolicyTicks,
		LoopHz: Number(loopHz), PolicyHz: Number(policyHz),
		Overruns: s.Loop.Overruns, MaxLatenessUS: s.Loop.MaxLateness.Microseconds(),
		LinkLost: s.Loop.LinkLost, LinkLatencyUS: s.Loop.LinkLatency.Microseconds(),
		CommandsDropped: a.commandsDropped.Load(), EventsDropped: a.core.EventsDropped(),
		PublishDropped: a.publishDropped.Load(),
	})
	st.robotSeq++
	a.publishJSON(client, a.topics.Topic(TopicRobotTelemetry), 0, false, robotTelemetry(st.robotSeq, now, s))
}

func (a *Adapter) publishCoreEvent(client paho.Client, ev *corebus.Event, st *loopState, cat *corebus.Catalogue, haveSnap bool, now time.Time) {
	at := ev.At
	if at.IsZero() {
		at = now
	}
	events := a.topics.Topic(TopicEvents)
	out := Event{Time: at, Type: ev.Kind.String(), Reason: ev.Reason}
	switch ev.Kind {
	case corebus.EventCommandDone:
		var err error
		if !ev.OK {
			err = fmt.Errorf("%w: %s", ErrRejectedByCore, ev.Reason)
		}
		if ev.Command.ReplyTo != "" {
			reply := Reply{ID: ev.Command.ID, OK: ev.OK}
			if err != nil {
				reply.Error = err.Error()
			}
			if haveSnap {
				reply.State = &ReplyState{Mode: st.snap.Mode.String(), EStop: st.snap.EStop, Skill: skillRef(st.snap.Skill, cat)}
			}
			if ev.Recalled.Valid {
				reply.Recall = recalled(&ev.Recalled, cat)
			}
			a.publishJSON(client, ev.Command.ReplyTo, 1, false, reply)
		}
		if err == nil {
			return
		}
		out = rejection(at, routeOf(ev.Command.Kind), ev.Command.ID, err)
		if ev.Recalled.Valid {
			out.Recall = recalled(&ev.Recalled, cat)
		}
	case corebus.EventFault, corebus.EventFaultCleared:
		out.Fault = ev.Fault
	case corebus.EventSkillSwitch:
		out.From, out.To = skillRef(ev.From, cat), skillRef(ev.To, cat)
		out.Switch = switchWhy(&ev.Switch)
		if ev.Recalled.Valid {
			out.Recall = recalled(&ev.Recalled, cat)
		}
	case corebus.EventRouteBlocked:
		out.From = skillRef(ev.From, cat)
		out.Switch = switchWhy(&ev.Switch)
	case corebus.EventModeChange:
		out.Mode = ev.Mode.String()
	case corebus.EventBankLoad:
		out.Path, out.OK = ev.BankPath, &ev.OK
		if !ev.OK {
			out.Error, out.Reason = ev.Reason, ""
		}
	}
	a.publishJSON(client, events, 1, false, out)
}

func rejection(at time.Time, route, id string, err error) Event {
	return Event{Time: at, Type: EventCommandRejected, Command: route, ID: id, Code: Code(err), Error: err.Error()}
}

func routeOf(k corebus.Kind) string {
	for route, rk := range routeKinds {
		if rk.kind == k {
			return route
		}
	}
	return k.String()
}

// publish hands msg to the client if the connection is open and drops it
// otherwise: the run loop never waits for a broker, and a reconnection
// republishes all retained state anyway.
func (a *Adapter) publish(client paho.Client, msg message) bool {
	if !client.IsConnectionOpen() {
		a.publishDropped.Add(1)
		return false
	}
	client.Publish(msg.topic, msg.qos, msg.retain, msg.payload)
	return true
}

func (a *Adapter) publishJSON(client paho.Client, topic string, qos byte, retain bool, v any) bool {
	payload, err := json.Marshal(v)
	if err != nil {
		a.log.Error("encoding a message", "topic", topic, "err", err)
		return false
	}
	return a.publish(client, message{topic, payload, qos, retain})
}

// enqueue hands a message made off the run loop to it.
func (a *Adapter) enqueue(topic string, qos byte, v any) {
	payload, err := json.Marshal(v)
	if err != nil {
		a.log.Error("encoding a message", "topic", topic, "err", err)
		return
	}
	if !a.outbox.Offer(message{topic, payload, qos, false}) {
		a.publishDropped.Add(1)
	}
}

func (a *Adapter) onMessage(_ paho.Client, m paho.Message) {
	if route, ok := a.topics.route(m.Topic()); ok {
		a.handle(route, m.Payload(), m.Retained(), time.Now())
	}
}

// handle validates one command and queues it to the core, or rejects it.
func (a *Adapter) handle(route string, payload []byte, retained bool, now time.Time) {
	cmd, err := a.validator.Decode(route, payload, retained, now)
	if err == nil {
		err = a.admit(&cmd)
	}
	if err != nil {
		a.reject(route, &cmd, now, err)
	}
}

// reject tells the operator why a command was not queued: a reply if it asked for one, and an
// event.
func (a *Adapter) reject(route string, cmd *corebus.Command, now time.Time, err error) {
	a.log.Info("command rejected", "route", route, "id", cmd.ID, "err", err)
	if cmd.ReplyTo != "" {
		a.enqueue(cmd.ReplyTo, 1, Reply{ID: cmd.ID, OK: false, Error: err.Error()})
	}
	a.enqueue(a.topics.Topic(TopicEvents), 1, rejection(now, route, cmd.ID, err))
}

// recallQueue is how many recalls may wait for their encoding; more are refused as busy (an
// operator does not send recalls faster than a few per second).
const recallQueue = 4

// offerRecalls hands queued recalls to the core, one at a time, until ctx is done.
func (a *Adapter) offerRecalls(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case cmd := <-a.recalls:
			if !a.core.OfferCommand(cmd) {
				a.commandsDropped.Add(1)
				a.reject(RouteRecall, &cmd, time.Now(), fmt.Errorf("%w: command queue full", ErrBusy))
			}
		}
	}
}

// admit applies the checks that depend on what came before, then queues.
func (a *Adapter) admit(cmd *corebus.Command) error {
	if cmd.ID != "" && a.recent.has(cmd.ID) {
		return fmt.Errorf("%w: %s", ErrDuplicate, cmd.ID)
	}
	if a.deadman != nil {
		if cmd.Kind == corebus.KindHeartbeat {
			a.deadman.beat()
		} else if startsMotion(cmd) && !a.deadman.present() {
			return fmt.Errorf("%w: no operator heartbeat within %v", ErrOperatorAbsent, a.cfg.Heartbeat)
		}
	}
	if cmd.Kind == corebus.KindRecall {
		select {
		case a.recalls <- *cmd:
		default:
			a.commandsDropped.Add(1)
			return fmt.Errorf("%w: %d recalls already wait for their encoding", ErrBusy, recallQueue)
		}
	} else if !a.core.OfferCommand(*cmd) {
		a.commandsDropped.Add(1)
		return fmt.Errorf("%w: command queue full", ErrBusy)
	}
	if cmd.ID != "" {
		a.recent.add(cmd.ID)
	}
	return nil
}

func startsMotion(cmd *corebus.Command) bool {
	return cmd.Kind == corebus.KindVelocity || cmd.Kind == corebus.KindGoal ||
		(cmd.Kind == corebus.KindMode && cmd.Mode == corebus.ModeRun)
}

// operatorSilent is the dead-man's action: stand still, and say so.
func (a *Adapter) operatorSilent() bool {
	now := time.Now()
	if !a.core.OfferCommand(corebus.Command{Kind: corebus.KindStandStill, IssuedAt: now, Lifetime: a.cfg.Heartbeat}) {
		a.commandsDropped.Add(1)
		return false
	}
	a.log.Warn("operator heartbeat lost: standing still", "window", a.cfg.Heartbeat)
	a.enqueue(a.topics.Topic(TopicEvents), 1, Event{Time: now, Type: EventDeadman,
		Reason: fmt.Sprintf("no operator heartbeat for %v: standing still", a.cfg.Heartbeat)})
	return true
}

// recentIDs remembers the last ids admitted, to refuse a command delivered twice.
type recentIDs struct {
	mu   sync.Mutex
	ids  []string
	next int
	set  map[string]struct{}
}

func newRecentIDs(n int) recentIDs {
	return recentIDs{ids: make([]string, n), set: make(map[string]struct{}, n)}
}

func (r *recentIDs) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[id]
	return ok
}

func (r *recentIDs) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.set, r.ids[r.next])
	r.ids[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ids)
}

// forgetfulStore is a paho message store that keeps nothing, so a client
// never resends a message from before a disconnection.
type forgetfulStore struct{}

func (forgetfulStore) Open()                             {}
func (forgetfulStore) Put(string, packets.ControlPacket) {}
func (forgetfulStore) Get(string) packets.ControlPacket  { return nil }
func (forgetfulStore) All() []string                     { return nil }
func (forgetfulStore) Del(string)                        {}
func (forgetfulStore) Close()                            {}
func (forgetfulStore) Reset()                            {}
