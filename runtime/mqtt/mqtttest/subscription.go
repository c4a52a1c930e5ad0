package mqtttest

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one message a Subscription saw.
type Message struct {
	Topic    string
	Payload  string
	Retained bool // the broker's stored copy, sent on subscribing
}

// Containing matches messages whose payload holds every one of parts.
func Containing(parts ...string) func(Message) bool {
	return func(m Message) bool {
		for _, p := range parts {
			if !strings.Contains(m.Payload, p) {
				return false
			}
		}
		return true
	}
}

// Subscription is a mosquitto_sub process collecting every message of one
// topic filter (QoS 1) until the test ends or Stop is called.
type Subscription struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	msgs []Message
}

// Subscribe starts mosquitto_sub on filter as account as and returns once
// the broker has acknowledged the subscription, so nothing published
// afterwards is missed.
func (m *Mosquitto) Subscribe(t testing.TB, as Account, filter string) *Subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// -d prints the protocol exchange on stdout, SUBACK included; message
	// lines are "<retained 0|1> <topic> <payload>" and never start with the
	// "Client"/"Subscribed" of the debug lines.
	args := m.clientArgs(as, []string{"-d", "-q", "1", "-t", filter, "-F", "%r %t %p"})
	cmd := ordinary(ctx, "stdbuf", append([]string{"-oL", "mosquitto_sub"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("mosquitto_sub %s: %v", filter, err)
	}
	s := &Subscription{cancel: cancel, done: make(chan struct{})}
	subscribed := make(chan struct{})
	go func() {
		defer close(s.done)
		defer func() { _ = cmd.Wait() }()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		acked := false
		for sc.Scan() {
			line := sc.Text()
			if !acked && strings.Contains(line, "received SUBACK") {
				acked = true
				close(subscribed)
				continue
			}
			flag, rest, ok := strings.Cut(line, " ")
			if !ok || (flag != "0" && flag != "1") {
				continue
			}
			topic, payload, _ := strings.Cut(rest, " ")
			s.mu.Lock()
			s.msgs = append(s.msgs, Message{Topic: topic, Payload: payload, Retained: flag == "1"})
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.Stop)
	select {
	case <-subscribed:
	case <-s.done:
		t.Fatalf("mosquitto_sub %s exited before subscribing", filter)
	case <-time.After(10 * time.Second):
		s.Stop()
		t.Fatalf("mosquitto_sub %s: no SUBACK within 10 s", filter)
	}
	return s
}

// Stop ends mosquitto_sub; the messages seen so far stay readable.
func (s *Subscription) Stop() {
	s.cancel()
	<-s.done
}

// Messages returns a copy of every message seen so far, in arrival order.
func (s *Subscription) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Count is the number of messages seen so far that match.
func (s *Subscription) Count(match func(Message) bool) int {
	n := 0
	for _, m := range s.Messages() {
		if match(m) {
			n++
		}
	}
	return n
}

// WaitFor returns the first message that matches, waiting up to within for
// it; it fails the test, naming what, if none comes.
func (s *Subscription) WaitFor(t testing.TB, within time.Duration, what string, match func(Message) bool) Message {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, m := range s.Messages() {
			if match(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto_sub saw no %s within %v; it saw %d messages", what, within, len(s.Messages()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
