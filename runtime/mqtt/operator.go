package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// OperatorConfig configures an operator's connection to one robot.
type OperatorConfig struct {
	RobotID     string
	Broker      string // tcp://host:port or ssl://host:port
	Credentials Credentials
	TLS         TLSFiles
	ClientID    string        // "solo-op-<random>"
	Lifetime    time.Duration // how long a command stays valid (expires_in_ms); 5 s
	Timeout     time.Duration // connect timeout; 5 s
}

// Operator is the operator's side of the interface, for command-line tools:
// it sends commands and waits for their replies, reads the retained state
// and watches state and events.
type Operator struct {
	client   paho.Client
	topics   Topics
	replyTo  string
	lifetime time.Duration

	mu      sync.Mutex
	pending map[string]chan Reply
}

// DialOperator connects to the broker and subscribes to its reply topic.
func DialOperator(ctx context.Context, cfg OperatorConfig) (*Operator, error) {
	topics, err := NewTopics(cfg.RobotID)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := brokerTLS(cfg.Broker, cfg.TLS)
	if err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "solo-op-" + randomHex(4)
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	o := &Operator{topics: topics, replyTo: topics.Reply(cfg.ClientID), lifetime: cfg.Lifetime, pending: map[string]chan Reply{}}
	opts := paho.NewClientOptions().
		AddBroker(cfg.Broker).
		SetClientID(cfg.ClientID).
		SetUsername(cfg.Credentials.Username).
		SetPassword(cfg.Credentials.Password).
		SetTLSConfig(tlsConfig).
		SetProtocolVersion(4).
		SetCleanSession(true).
		SetAutoReconnect(false).
		SetConnectTimeout(cfg.Timeout)
	o.client = paho.NewClient(opts)
	if err := waitToken(ctx, o.client.Connect(), cfg.Timeout); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotConnected, cfg.Broker, err)
	}
	if err := waitToken(ctx, o.client.Subscribe(o.replyTo, 1, o.onReply), cfg.Timeout); err != nil {
		o.client.Disconnect(0)
		return nil, fmt.Errorf("subscribing to replies: %w", err)
	}
	return o, nil
}

// Close disconnects.
func (o *Operator) Close() { o.client.Disconnect(250) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func (o *Operator) onReply(_ paho.Client, m paho.Message) {
	var r Reply
	if json.Unmarshal(m.Payload(), &r) != nil {
		return
	}
	o.mu.Lock()
	ch := o.pending[r.ID]
	delete(o.pending, r.ID)
	o.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// header stamps a new command.
func (o *Operator) header() Header {
	now := time.Now().UTC()
	ms := o.lifetime.Milliseconds()
	return Header{ID: randomHex(8), IssuedAt: &now, ExpiresInMS: &ms, ReplyTo: o.replyTo}
}

// send publishes a command and waits for its reply until ctx is done. A
// reply with ok false comes back with an error wrapping ErrCommandRejected.
func (o *Operator) send(ctx context.Context, route string, h Header, payload any) (Reply, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return Reply{}, err
	}
	ch := make(chan Reply, 1)
	o.mu.Lock()
	o.pending[h.ID] = ch
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		delete(o.pending, h.ID)
		o.mu.Unlock()
	}()
	if err := waitToken(ctx, o.client.Publish(o.topics.Command(route), 1, false, body), o.lifetime); err != nil {
		return Reply{}, fmt.Errorf("publishing cmd/%s: %w", route, err)
	}
	select {
	case r := <-ch:
		if !r.OK {
			return r, fmt.Errorf("%w: %s", ErrCommandRejected, r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return Reply{}, fmt.Errorf("%w to cmd/%s %s: %w", ErrNoReply, route, h.ID, ctx.Err())
	}
}

// SelectSkill switches the robot to a skill.
func (o *Operator) SelectSkill(ctx context.Context, sel SkillSelector) (Reply, error) {
	h := o.header()
	return o.send(ctx, RouteSkill, h, skillPayload{Header: h, Select: &sel})
}

// Recall runs the stored skill that best serves a reward given as weights on named observation
// elements ("base_lin_vel.x", "joint_pos.FL_KFE"); maxDistance > 0 overrides the robot's
// threshold for a reward it must FRE-encode. The reply's Recall names the skill and the score or
// distance.
func (o *Operator) Recall(ctx context.Context, reward map[string]float64, maxDistance float64) (Reply, error) {
	h := o.header()
	p := recallPayload{Header: h, Reward: reward}
	if maxDistance > 0 {
		p.MaxDistance = &maxDistance
	}
	return o.send(ctx, RouteRecall, h, p)
}

// Goal sends a navigation goal: x, y in m and yaw in rad in the world (motion-capture) frame.
func (o *Operator) Goal(ctx context.Context, x, y, yaw float64) (Reply, error) {
	h := o.header()
	return o.send(ctx, RouteGoal, h, goalPayload{Header: h, X: &x, Y: &y, Yaw: &yaw})
}

// SetMode asks for mode stand, run, damp or stop.
func (o *Operator) SetMode(ctx context.Context, mode string) (Reply, error) {
	h := o.header()
	return o.send(ctx, RouteMode, h, modePayload{Header: h, Mode: mode})
}

// Stop asks for mode stop.
func (o *Operator) Stop(ctx context.Context) (Reply, error) { return o.SetMode(ctx, "stop") }

// EStop latches the emergency stop; ClearEStop releases it.
func (o *Operator) EStop(ctx context.Context) (Reply, error) {
	h := o.header()
	return o.send(ctx, RouteEStop, h, h)
}

// ClearEStop releases a latched emergency stop.
func (o *Operator) ClearEStop(ctx context.Context) (Reply, error) {
	h := o.header()
	return o.send(ctx, RouteEStopClear, h, h)
}

// Bank returns the skills the robot can run, from its retained state/bank.
func (o *Operator) Bank(ctx context.Context) (BankState, error) {
	var b BankState
	err := o.retained(ctx, TopicBank, &b)
	return b, err
}

// Connection returns the robot's retained connection state: "online",
// "offline" or "lost". A robot publishes "online" only once it listens for
// commands.
func (o *Operator) Connection(ctx context.Context) (string, error) {
	var state string
	err := o.retained(ctx, TopicConnection, &state)
	return state, err
}

// retained decodes the first message on the robot's topic suffix, normally
// the broker's retained copy, into dst.
func (o *Operator) retained(ctx context.Context, suffix string, dst any) error {
	topic := o.topics.Topic(suffix)
	got := make(chan []byte, 1)
	tok := o.client.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) {
		select {
		case got <- m.Payload():
		default:
		}
	})
	if err := waitToken(ctx, tok, o.lifetime); err != nil {
		return fmt.Errorf("subscribing to %s: %w", topic, err)
	}
	defer o.client.Unsubscribe(topic)
	select {
	case payload := <-got:
		if err := json.Unmarshal(payload, dst); err != nil {
			return fmt.Errorf("decoding %s: %w", topic, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: %w", ErrNoRetainedYet, topic, ctx.Err())
	}
}

// Update is one message seen by Watch.
type Update struct {
	Topic    string // the topic after the robot's prefix, e.g. "state/mode" or "events"
	Retained bool   // the broker's stored copy, sent when the watch began
	Payload  json.RawMessage
}

// Watch calls fn with every state change and event of the robot, starting
// with the retained state, until ctx is done. fn runs on the client's
// goroutine, one message at a time.
func (o *Operator) Watch(ctx context.Context, telemetry bool, fn func(Update)) error {
	filters := map[string]byte{o.topics.Topic("state/#"): 1, o.topics.Topic(TopicEvents): 1}
	if telemetry {
		filters[o.topics.Topic("telemetry/#")] = 0
	}
	prefix := o.topics.Prefix()
	tok := o.client.SubscribeMultiple(filters, func(_ paho.Client, m paho.Message) {
		fn(Update{Topic: strings.TrimPrefix(m.Topic(), prefix), Retained: m.Retained(), Payload: m.Payload()})
	})
	if err := waitToken(ctx, tok, o.lifetime); err != nil {
		return fmt.Errorf("subscribing to state and events: %w", err)
	}
	<-ctx.Done()
	names := make([]string, 0, len(filters))
	for f := range filters {
		names = append(names, f)
	}
	o.client.Unsubscribe(names...)
	return nil
}
