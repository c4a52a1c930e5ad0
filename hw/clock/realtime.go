//go:build linux

package clock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

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
		var errs error
		err := settle(func() (changed bool, err error) {
			tids, err := threadIDs()
			if err != nil {
				return false, err
			}
			for _, tid := range tids {
				want, ok := prev[tid]
				if !ok {
					want = &unix.SchedAttr{Policy: unix.SCHED_NORMAL}
				}
				cur, err := unix.SchedGetAttr(tid, 0)
				if err == nil && cur.Policy == want.Policy && cur.Priority == want.Priority && cur.Nice == want.Nice {
					continue
				}
				if err == nil {
					err = unix.SchedSetAttr(tid, want, 0)
				}
				switch {
				case errors.Is(err, unix.ESRCH): // the thread exited
				case err != nil:
					// Reported, not retried: a thread that cannot be restored would keep the
					// walk going for ever.
					errs = errors.Join(errs, fmt.Errorf("clock: restore scheduling of thread %d: %w", tid, err))
				default:
					changed = true
				}
			}
			return changed, nil
		})
		return errors.Join(errs, err)
	}
	// Only the first pass sees what threads had before: one first seen later was started during
	// the walk, perhaps by a thread already changed, and goes back to ordinary scheduling, as a
	// thread started after the call does.
	first := true
	err = settle(func() (changed bool, err error) {
		tids, err := threadIDs()
		if err != nil {
			return false, err
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
				if !first {
					attr = &unix.SchedAttr{Policy: unix.SCHED_NORMAL}
				}
				prev[tid] = attr
				err = unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}, 0)
			}
			if errors.Is(err, unix.EPERM) {
				return false, fmt.Errorf("%w: %w", ErrNotPermitted, err)
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return false, fmt.Errorf("clock: set SCHED_FIFO on thread %d: %w", tid, err)
			}
			changed = true
		}
		first = false
		return changed, nil
	})
	if err != nil {
		return nil, errors.Join(err, undo())
	}
	return undo, nil
}

// settlePause is how long settle waits before the pass that confirms nothing changed.
const settlePause = time.Millisecond

// settle runs pass, a walk over the process's threads, until it has changed nothing twice in a
// row, the second time after settlePause. A thread started while a pass runs inherits the policy
// its creator had when it was cloned, and one whose creation was under way when the thread list
// was read appears only in a later list: with a single quiet pass, restore left a thread at
// SCHED_FIFO in 4 of 5 runs of TestRealtimeProcessRestoresWhileThreadsStart (50 rounds each).
func settle(pass func() (changed bool, err error)) error {
	for quiet := 0; quiet < 2; {
		changed, err := pass()
		switch {
		case err != nil:
			return err
		case changed:
			quiet = 0
		default:
			quiet++
			if quiet < 2 {
				time.Sleep(settlePause)
			}
		}
	}
	return nil
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
