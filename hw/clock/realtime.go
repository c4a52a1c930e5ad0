//go:build linux

package clock

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNotPermitted means the process may not use real-time scheduling: it needs CAP_SYS_NICE
// (`sudo setcap cap_sys_nice+ep <binary>`) or an rtprio limit in /etc/security/limits.conf.
var ErrNotPermitted = errors.New("clock: real-time scheduling not permitted")

// Realtime moves the calling OS thread to the SCHED_FIFO policy at priority prio (1..99), so a
// control loop's thread wakes ahead of ordinary work on a busy machine. The calling goroutine
// must be locked to its thread (runtime.LockOSThread, or a Pacer's goroutine), and must call
// restore before unlocking it: otherwise the runtime would reuse a real-time thread for any
// goroutine. A goroutine that exits locked takes its thread with it and need not restore.
func Realtime(prio int) (restore func() error, err error) {
	if prio < 1 || prio > 99 {
		return nil, fmt.Errorf("clock: SCHED_FIFO priority must be 1..99, got %d", prio)
	}
	prev, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil, fmt.Errorf("clock: read scheduling policy: %w", err)
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: %w", ErrNotPermitted, err)
		}
		return nil, fmt.Errorf("clock: set SCHED_FIFO %d: %w", prio, err)
	}
	return func() error {
		if err := unix.SchedSetAttr(0, prev, 0); err != nil {
			return fmt.Errorf("clock: restore scheduling policy: %w", err)
		}
		return nil
	}, nil
}

// Pin restricts the calling OS thread to the given CPUs, so a control loop's thread keeps a core
// of its own (best with that core kept free of other work: isolcpus, or other real-time
// threads pinned elsewhere) instead of being moved between cores by the kernel. The calling
// goroutine must be locked to its thread and call restore before unlocking it, as for Realtime.
// Setting the affinity of one's own thread needs no privilege.
func Pin(cpus []int) (restore func() error, err error) {
	if len(cpus) == 0 {
		return nil, errors.New("clock: pin to no CPU")
	}
	var prev, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &prev); err != nil {
		return nil, fmt.Errorf("clock: read CPU affinity: %w", err)
	}
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return nil, fmt.Errorf("clock: no CPU %d", c)
		}
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("clock: pin to CPUs %v: %w", cpus, err)
	}
	return func() error {
		if err := unix.SchedSetaffinity(0, &prev); err != nil {
			return fmt.Errorf("clock: restore CPU affinity: %w", err)
		}
		return nil
	}, nil
}

// RealtimeProcess moves every thread of the process to SCHED_FIFO at priority prio; threads the
// Go runtime starts later inherit it. Raising only the control loop's thread is not enough on a
// busy machine: whenever its goroutine comes back from a system call or is preempted, the Go
// scheduler may need another of its threads (sysmon, an idle M) to hand it a P, and an ordinary
// thread can wait tens of milliseconds behind other processes. Measured here: 5-180 ms stalls of
// a 1 kHz loop at load 8 on 2 cores, none with the whole process real-time. The process must
// not spin: the kernel's real-time throttling (95% of each CPU) is the only guard. restore puts
// back each thread's previous policy (ordinary scheduling for threads started since).
func RealtimeProcess(prio int) (restore func() error, err error) {
	if prio < 1 || prio > 99 {
		return nil, fmt.Errorf("clock: SCHED_FIFO priority must be 1..99, got %d", prio)
	}
	prev := map[int]*unix.SchedAttr{}
	undo := func() error {
		tids, err := threadIDs()
		for _, tid := range tids {
			attr, ok := prev[tid]
			if !ok {
				attr = &unix.SchedAttr{Policy: unix.SCHED_NORMAL}
			}
			if e := unix.SchedSetAttr(tid, attr, 0); e != nil && !errors.Is(e, unix.ESRCH) {
				err = errors.Join(err, fmt.Errorf("clock: restore scheduling of thread %d: %w", tid, e))
			}
		}
		return err
	}
	// A thread started while we walk the list inherits the policy of whichever thread started it:
	// walk until a pass finds no thread left to change.
	for changed := true; changed; {
		changed = false
		tids, err := threadIDs()
		if err != nil {
			return nil, errors.Join(err, undo())
		}
		for _, tid := range tids {
			if _, done := prev[tid]; done {
				continue
			}
			attr, err := unix.SchedGetAttr(tid, 0)
			if errors.Is(err, unix.ESRCH) {
				continue // the thread exited
			}
			if err == nil {
				prev[tid] = attr
				err = unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}, 0)
			}
			if errors.Is(err, unix.EPERM) {
				return nil, errors.Join(fmt.Errorf("%w: %w", ErrNotPermitted, err), undo())
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return nil, errors.Join(fmt.Errorf("clock: set SCHED_FIFO on thread %d: %w", tid, err), undo())
			}
			changed = true
		}
	}
	return undo, nil
}

func threadIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("clock: list threads: %w", err)
	}
	tids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
