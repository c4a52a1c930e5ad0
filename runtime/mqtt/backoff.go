package mqtt

import (
	"math/rand/v2"
	"time"
)

// Backoff spaces reconnection attempts: Min after the first failure,
// doubling up to Max. Each wait is drawn uniformly from [d/2, d] so that a
// fleet that lost the same broker does not come back in lockstep.
type Backoff struct {
	Min, Max time.Duration
}

type backoff struct {
	Backoff
	next time.Duration
}

// wait returns how long to wait before the next attempt.
func (b *backoff) wait() time.Duration {
	d := max(b.next, b.Min)
	b.next = min(2*d, b.Max)
	return d/2 + rand.N(d/2+1)
}

// reset starts over from Min, after a connection that held.
func (b *backoff) reset() { b.next = 0 }
