//go:build linux

package clock

import (
	"errors"
	"fmt"

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
