package driver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/runtime/core"
)

// Link is the host side of a connected master-board link: hw/host.Session.
type Link interface {
	Receive(out *proto.Sensor) error
	Send(cmd *proto.Command) error
}

// RealTime runs the core on a live link.
type RealTime struct {
	Core *core.Core
	Link Link
	// Period is the link period (1 ms); a packet later than Period+Slack counts as a missed period.
	Period, Slack time.Duration
	// Budget is how long receiving-to-sending may take before the tick counts as an overrun.
	Budget time.Duration
	// Perception fills the newest perception; nil for none.
	Perception func(now time.Duration, p *core.Perception)
	// Slider is the slider box; nil for none.
	Slider *slider.Box
	// Observe runs after each command went out (so a recorder can take both payloads).
	Observe Observer
	// Priority, when 1..99, runs the loop's thread at that SCHED_FIFO priority; without the
	// privilege the loop runs at ordinary priority.
	Priority int
	// CPUs, when not empty, pins the loop's thread to these CPUs (hw/clock.Pin).
	CPUs []int
	// Arrival, when set, returns when the sensor packet Link.Receive last returned reached this
	// host (link.Ethernet.LastArrival, the kernel's stamp). With it Timing tells the periods the
	// board missed from the loop's own.
	Arrival func() (time.Time, error)

	stats Timing
}

// Timing is the loop's timing record.
type Timing struct {
	Ticks, Fresh, Missed, Overruns uint64
	// BoardMissed counts the missed periods already there when the packets reached this host
	// (by the kernel's receive stamps; zero without RealTime.Arrival): the board, or the
	// simulator behind it, or the wire sent them late. Missed - BoardMissed is the loop's own
	// doing: packets that arrived on time and waited for a loop that was not running.
	BoardMissed uint64
	// Period is the time between consecutive sensor packets as the loop took them; Compute the
	// time from a packet to the command that answers it; ReadDelay the time a packet waited in
	// the socket for the loop (with RealTime.Arrival).
	Period, Compute, ReadDelay clock.Histogram
}

// Timing returns the statistics; call it from the loop's goroutine or after Run returned.
func (d *RealTime) Timing() *Timing { return &d.stats }

// Run loops until ctx ends or the link fails for good. The calling goroutine is locked to its OS
// thread for the duration.
func (d *RealTime) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.Priority > 0 {
		if restore, err := clock.Realtime(d.Priority); err == nil {
			defer func() { _ = restore() }()
		}
	}
	if len(d.CPUs) > 0 {
		restore, err := clock.Pin(d.CPUs)
		if err != nil {
			return fmt.Errorf("driver: %w", err)
		}
		defer func() { _ = restore() }()
	}
	period := cmp(d.Period, time.Millisecond)
	slack := cmp(d.Slack, period/2)
	budget := cmp(d.Budget, period/2)
	var (
		sensor     proto.Sensor
		have       bool
		perception core.Perception
		snap       slider.Snapshot
		in         core.Input
		out        core.Output
		lastPacket time.Time
		lastStamp  time.Time // the previous packet's arrival at this host (with Arrival)
		overran    bool
	)
	start := time.Now()
	for ctx.Err() == nil {
		err := d.Link.Receive(&sensor)
		arrived := time.Now()
		fresh := err == nil
		switch {
		case fresh:
			have = true
			d.stats.Fresh++
			if !lastPacket.IsZero() {
				gap := arrived.Sub(lastPacket)
				d.stats.Period.Add(gap)
				d.stats.Missed += missed(gap, period, slack)
			}
			lastPacket = arrived
			if d.Arrival != nil {
				if stamp, err := d.Arrival(); err == nil {
					if !lastStamp.IsZero() {
						d.stats.BoardMissed += missed(stamp.Sub(lastStamp), period, slack)
					}
					d.stats.ReadDelay.Add(max(arrived.Sub(stamp), 0))
					lastStamp = stamp
				}
			}
		case errors.Is(err, host.ErrSensorTimeout), errors.Is(err, host.ErrCommandsIgnored):
			// Silence, or a board that stopped taking our commands (its watchdog fired): tick
			// the core anyway so that its link timeout latches the fault.
			fresh = false
		default:
			return fmt.Errorf("driver: link: %w", err)
		}
		now := arrived.Sub(start)
		in = core.Input{Now: now, Fresh: fresh}
		if have {
			in.Sensor = &sensor
		}
		if d.Perception != nil {
			d.Perception(now, &perception)
			in.Perception = &perception
		}
		if d.Slider != nil {
			snap = d.Slider.Snapshot(arrived)
			in.Slider = &snap
		}
		// The watchdog's verdict on the previous tick: the core counts consecutive overruns
		// against its budget and latches a fault past it.
		in.Overrun = overran
		d.Core.Step(&in, &out)
		if err := d.Link.Send(&out.Command); err != nil {
			return fmt.Errorf("driver: link: %w", err)
		}
		if d.Observe != nil {
			d.Observe(&in, &out)
		}
		compute := time.Since(arrived)
		d.stats.Compute.Add(compute)
		overran = compute > budget
		if overran {
			d.stats.Overruns++
		}
		d.stats.Ticks++
	}
	return ctx.Err()
}

// missed is how many periods a gap between two packets skipped: none up to period+slack.
func missed(gap, period, slack time.Duration) uint64 {
	if gap <= period+slack {
		return 0
	}
	return uint64((gap - slack) / period)
}

func cmp(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
