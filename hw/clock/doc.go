// Package clock owns real-time pacing on Linux: a Pacer that releases a loop at fixed
// CLOCK_MONOTONIC deadlines (1 kHz for the master-board link) with microsecond lateness, the
// allocation-free Histogram that such loops use to report lateness and latency percentiles, and
// the scheduling of a loop's threads (SCHED_FIFO priority, CPU affinity), and KeepAwake, which
// keeps a virtual machine's CPUs from halting so that such a loop wakes on time (run it in a
// process of its own: skillrt keep-awake; clocktest does it for real-time tests).
//
// Go's time.Ticker and time.Sleep round sub-millisecond waits up to the runtime poller's
// resolution and miss about one period in ten at 1 kHz. A Pacer instead locks its goroutine to an
// OS thread, sets that thread's timer slack to 1 ns, sleeps with clock_nanosleep(TIMER_ABSTIME)
// until shortly before the deadline and spins the rest of the way. It reports how late each
// release was and how many deadlines an overrunning loop missed, and it keeps the phase: a late
// loop is released for the most recent deadline, never in a burst.
package clock
