//go:build linux

package clock

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// KeepAwake keeps the given CPUs (none given: every CPU) from going idle until ctx is done: on
// each, a thread at the SCHED_IDLE policy (below every ordinary and real-time thread, so it
// runs only when the CPU would otherwise idle) busy-loops. It returns when ctx is done, or,
// with the error and every thread stopped, as soon as one cannot be placed.
//
// Why: on a virtual machine an idle CPU halts, and waking it (a timer, a packet for the control
// loop) goes through the hypervisor, which may take milliseconds to run it again. Measured on
// the 2-vCPU development VM: a 1 kHz SCHED_FIFO loop woke more than 0.5 ms late 23-99 times in
// 15 s with the CPUs idle, 7 times with them kept awake; the 60 s real-time run over AF_PACKET
// missed 1013 periods, 115 kept awake. On bare metal the kernel's idle=poll (or a
// /dev/cpu_dma_latency of 0 where a cpuidle driver reads it) does the same without a process.
//
// Run it in a process of its own (skillrt keep-awake), never in the controller's: a goroutine
// that spins holds one of the Go scheduler's Ps, and a stop-the-world would wait for a thread
// that runs only when its CPU has nothing else to do.
func KeepAwake(ctx context.Context, cpus []int) error {
	if len(cpus) == 0 {
		for c := range runtime.NumCPU() {
			cpus = append(cpus, c)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(cpus))
	var wg sync.WaitGroup
	for _, cpu := range cpus {
		wg.Go(func() {
			if err := spinOn(ctx, cpu); err != nil {
				errs <- err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case err := <-errs:
		cancel()
		<-done
		return err
	case <-done:
		return nil
	}
}

// spinOn locks the calling goroutine to its thread, pins the thread to cpu, moves it to
// SCHED_IDLE, busy-loops until ctx is done, and gives the thread back as it found it and
// unlocked, so the Go scheduler may reuse it. (Leaving it locked would not do: a locked goroutine
// that ends on the process's main thread leaves that thread parked for good, idle policy and
// pinning included.) A thread whose scheduling cannot be restored stays locked and ends with its
// goroutine. It pins first: a thread already at SCHED_IDLE runs only when a CPU has nothing else
// to do, so on a busy machine it could wait for seconds, unpinned, before it pinned itself.
func spinOn(ctx context.Context, cpu int) error {
	runtime.LockOSThread()
	prev, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("clock: read scheduling policy: %w", err)
	}
	unpin, err := Pin([]int{cpu})
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0); err != nil {
		if unpin() == nil {
			runtime.UnlockOSThread()
		}
		return fmt.Errorf("clock: SCHED_IDLE on CPU %d: %w", cpu, err)
	}
	spin(ctx)
	if unix.SchedSetAttr(0, prev, 0) == nil && unpin() == nil {
		runtime.UnlockOSThread()
	}
	return nil
}

// spin busy-loops until ctx is done, looking at it every few hundred microseconds.
func spin(ctx context.Context) {
	for i := 0; ; i++ {
		if i%(1<<16) == 0 && ctx.Err() != nil {
			return
		}
	}
}
