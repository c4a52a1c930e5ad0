package mqtt

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// A recall's FRE encoding (tens of ms in the core's OfferCommand) does not hold up the commands
// that arrive behind it: an e-stop sent while a recall is being encoded reaches the core first.
// Recalls beyond the queue are refused as busy, with a reason, and the rest still arrive.
func TestRecallEncodingDoesNotHoldUpAnEStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core := newFakeCore()
		encoding := make(chan struct{})
		core.offered = func(c corebus.Command) {
			if c.Kind == corebus.KindRecall {
				<-encoding // the encoder at work
			}
		}
		a, err := New(Config{RobotID: testRobot, Broker: "tcp://127.0.0.1:1", Logger: quietLog}, core)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.offerRecalls(ctx)
		}()
		defer func() { cancel(); <-done }()
		recall := func() {
			a.handle(RouteRecall, command(map[string]any{"reward": map[string]any{"base_ang_vel.z": 1}}), false, time.Now())
		}
		drain := func() (kinds []corebus.Kind) {
			var c corebus.Command
			for core.commands.Poll(&c) {
				kinds = append(kinds, c.Kind)
			}
			return kinds
		}

		recall()
		synctest.Wait() // the first recall is being encoded
		a.handle(RouteEStop, command(nil), false, time.Now())
		if got := drain(); len(got) != 1 || got[0] != corebus.KindEStop {
			t.Fatalf("while a recall was encoded the core got %v, want the e-stop", got)
		}
		for range recallQueue + 1 { // one more than may wait
			recall()
		}
		var m message
		var refused []string
		for a.outbox.Poll(&m) {
			refused = append(refused, string(m.payload))
		}
		if len(refused) != 1 || !strings.Contains(refused[0], "recalls already wait") {
			t.Fatalf("events after %d queued recalls: %q, want one busy refusal", recallQueue+1, refused)
		}
		for range recallQueue + 1 {
			encoding <- struct{}{}
		}
		synctest.Wait()
		if got := drain(); len(got) != recallQueue+1 {
			t.Fatalf("the core got %v, want the first recall and the %d queued", got, recallQueue)
		}
	})
}
