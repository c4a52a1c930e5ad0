package mqtt

import (
	"sync"
	"time"
)

// deadman is the operator dead-man switch: once a heartbeat has been seen,
// silence longer than the window calls expire once, and the operator counts
// as absent until the next heartbeat.
type deadman struct {
	window time.Duration
	// expire acts on the silence; it reports false when it could not (the
	// core's queue was full), and is then retried every retry.
	expire func() bool
	retry  time.Duration

	mu    sync.Mutex
	last  time.Time
	live  bool
	timer *time.Timer
}

func newDeadman(window time.Duration, expire func() bool) *deadman {
	return &deadman{window: window, expire: expire, retry: 10 * time.Millisecond}
}

// beat records a heartbeat.
func (d *deadman) beat() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last, d.live = time.Now(), true
	if d.timer == nil {
		d.timer = time.AfterFunc(d.window, d.fire)
	} else {
		d.timer.Reset(d.window)
	}
}

// present reports whether the operator's heartbeat is current.
func (d *deadman) present() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.live
}

func (d *deadman) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	// A beat may have come in while this call was already on its way.
	if !d.live || time.Since(d.last) < d.window {
		return
	}
	if !d.expire() {
		d.timer.Reset(d.retry)
		return
	}
	d.live = false
}

func (d *deadman) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}
