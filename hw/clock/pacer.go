//go:build linux

package clock

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spinWindow is how long before a deadline the Pacer stops sleeping and starts spinning: enough
// to absorb the kernel's wake-up latency, small enough to cost little CPU.
const spinWindow = 100 * time.Microsecond

// Tick describes one release of a Pacer.
type Tick struct {
	Index    uint64        // deadline number since Start, missed deadlines included (first is 1)
	Lateness time.Duration // how long after its deadline Wait returned
	Missed   int           // deadlines passed without a release because the loop overran them
	// Gap is the time since the previous release (since Start for the first): how long the
	// loop did not run, stalls included.
	Gap time.Duration
}

// Stats summarises a Pacer's releases.
type Stats struct {
	Ticks  uint64 // releases
	Missed uint64 // deadlines skipped by overruns
	// LatenessP50, LatenessP99 and LatenessMax describe how late releases were.
	LatenessP50, LatenessP99, LatenessMax time.Duration
}

// Pacer releases one goroutine at fixed deadlines. It is owned by the goroutine that called
// Start: only that goroutine may call Wait, Stats and Stop.
type Pacer struct {
	period    time.Duration
	base      time.Time     // Go's monotonic clock at Start ...
	baseMono  time.Duration // ... and CLOCK_MONOTONIC at the same instant
	next      time.Duration // next deadline, since base
	released  time.Duration // the last release, since base
	index     uint64
	missed    uint64
	lateness  Histogram
	prevSlack int
}

// Start locks the calling goroutine to its OS thread, sets the thread's timer slack to 1 ns and
// returns a Pacer whose first deadline is one period from now. Call Stop when done, from the
// same goroutine.
func Start(period time.Duration) (*Pacer, error) {
	if period <= 0 {
		return nil, fmt.Errorf("clock: period must be positive, got %v", period)
	}
	runtime.LockOSThread()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	}
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("clock: set timer slack: %w", err)
	}
	p := &Pacer{period: period, prevSlack: slack}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		p.Stop()
		return nil, fmt.Errorf("clock: read CLOCK_MONOTONIC: %w", err)
	}
	// Go's monotonic clock is CLOCK_MONOTONIC read through the vDSO: cheap enough to spin on.
	p.base, p.baseMono = time.Now(), time.Duration(ts.Nano())
	p.next = period
	return p, nil
}

// Period is the time between deadlines.
func (p *Pacer) Period() time.Duration { return p.period }

// Wait blocks until the next deadline and returns it. If the loop overran deadlines, Wait
// returns at once for the most recent one and reports the others as missed.
func (p *Pacer) Wait() Tick {
	for {
		if time.Since(p.base) >= p.next-spinWindow {
			break
		}
		wake := unix.NsecToTimespec(int64(p.baseMono + p.next - spinWindow))
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &wake, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			break // cannot happen with a valid timespec; spinning still keeps the deadline
		}
	}
	now := time.Since(p.base)
	for now < p.next {
		now = time.Since(p.base)
	}
	late := now - p.next
	skipped := late / p.period
	deadline := p.next + skipped*p.period
	p.next = deadline + p.period
	p.index += uint64(skipped) + 1
	p.missed += uint64(skipped)
	t := Tick{Index: p.index, Lateness: now - deadline, Missed: int(skipped), Gap: now - p.released}
	p.released = now
	p.lateness.Add(t.Lateness)
	return t
}

// Stats summarises the releases so far.
func (p *Pacer) Stats() Stats {
	return Stats{
		Ticks:       p.lateness.Count(),
		Missed:      p.missed,
		LatenessP50: p.lateness.Quantile(0.5),
		LatenessP99: p.lateness.Quantile(0.99),
		LatenessMax: p.lateness.Max(),
	}
}

// Stop restores the thread's timer slack and unlocks the goroutine from its thread.
func (p *Pacer) Stop() {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(p.prevSlack), 0, 0, 0)
	runtime.UnlockOSThread()
}
