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

	stats Timing
}

// Timing is the loop's timing record.
type Timing struct {
	Ticks, Fresh, Missed, Overruns uint64
	// Period is the time between consecutive sensor packets; Compute the time from a packet to
	// the command that answers it.
	Period, Compute clock.Histogram
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
				if gap > period+slack {
					d.stats.Missed += uint64((gap - slack) / period)
				}
			}
			lastPacket = arrived
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

func cmp(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
