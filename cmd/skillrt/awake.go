package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dualforce/dualforce/hw/clock"
)

const keepAwakeHelp = `skillrt keep-awake: keep CPUs from idling, for the control loop on a virtual machine.

On a VM an idle CPU halts, and waking it for the control loop's next packet or timer goes
through the hypervisor, which can take milliseconds: the 1 kHz loop then misses periods however
high its priority. This command busy-loops on each CPU at the SCHED_IDLE policy, below every
other thread, so the CPU is never idle and whatever needs it runs at once. It costs a whole CPU
of the host per CPU named. Run it beside skillrt run (and the simulator) until Ctrl-C; it needs
no privilege. On the robot's own computer boot with idle=poll instead (or isolcpus plus
nohz_full for the control core).

Flags:
`

func keepAwakeCmd(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlags("skillrt keep-awake", keepAwakeHelp, stderr)
	var cpus cpuList
	fs.Var(&cpus, "cpus", "CPUs to keep awake (comma-separated); empty: every CPU")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if err := clock.KeepAwake(ctx, cpus); err != nil {
		fmt.Fprintln(stderr, "skillrt keep-awake:", err)
		return 1
	}
	return 0
}
