package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/runtime/core"
)

// Board is the in-process master board a lockstep run talks to: hw/board.Board.
type Board interface {
	HandlePayload(p []byte) []byte
	Tick() []byte
}

// Observer sees every tick's input and output; it runs on the control thread and must not block.
type Observer func(in *core.Input, out *core.Output)

// Lockstep runs the core against an in-process board, one board tick per Step.
type Lockstep struct {
	Core  *core.Core
	Board Board
	// SessionID is the host's session id (non-zero).
	SessionID uint16
	// Perception fills the perception the robot would see at time now; nil for none.
	Perception func(now time.Duration, p *core.Perception)
	// Slider returns the slider box state at time now; nil for no box.
	Slider func(now time.Duration) *slider.Snapshot
	// DropSensor and DropCommand script link faults: a true return loses that tick's frame.
	DropSensor, DropCommand func(tick uint64) bool
	Observe                 Observer

	tick       uint64
	index      uint16
	sensor     proto.Sensor
	sensorRaw  []byte // this tick's sensor payload as the board sent it; nil when none came
	haveSensor bool
	perception core.Perception
	in         core.Input
	out        core.Output
	cmdBuf     [proto.CommandLen]byte
}

// ErrNoAck reports a board that never acknowledged the init.
var ErrNoAck = errors.New("driver: the board did not acknowledge the init within 2500 ticks")

// Connect runs the init handshake: an init every tick until the board acknowledges it.
func (d *Lockstep) Connect() error {
	// The board takes id 0, but its packets before the first session carry 0
	// too, so a host on 0 could not tell its own session from boot-time packets.
	if d.SessionID == 0 {
		return fmt.Errorf("driver: session id 0 is what a board sends before any session; choose another")
	}
	init := proto.Init{Version: proto.Version, SessionID: d.SessionID}
	var buf [proto.InitLen]byte
	if err := init.Marshal(buf[:]); err != nil {
		return err
	}
	for range 2500 {
		d.Board.HandlePayload(buf[:])
		d.tick++
		p := d.Board.Tick()
		if len(p) != proto.AckLen {
			continue
		}
		var ack proto.Ack
		if err := ack.Unmarshal(p); err != nil {
			return err
		}
		if ack.Version != proto.Version {
			return &proto.VersionMismatchError{Board: ack.Version, Host: proto.Version}
		}
		if ack.SessionID == d.SessionID {
			return nil
		}
	}
	return ErrNoAck
}

// Now is the simulated time of the last tick.
func (d *Lockstep) Now() time.Duration { return time.Duration(d.tick) * time.Millisecond }

// Output is the core's output of the last Step.
func (d *Lockstep) Output() *core.Output { return &d.out }

// Step advances the board and the core by one millisecond.
func (d *Lockstep) Step() error {
	d.tick++
	now := d.Now()
	fresh := false
	d.sensorRaw = nil
	if p := d.Board.Tick(); len(p) == proto.SensorLen && (d.DropSensor == nil || !d.DropSensor(d.tick)) {
		if err := d.sensor.Unmarshal(p); err != nil {
			return fmt.Errorf("driver: sensor packet: %w", err)
		}
		if d.sensor.SessionID == d.SessionID {
			fresh, d.haveSensor, d.sensorRaw = true, true, p
		}
	}
	d.in = core.Input{Now: now, Fresh: fresh}
	if d.haveSensor {
		d.in.Sensor = &d.sensor
	}
	if d.Perception != nil {
		d.Perception(now, &d.perception)
		d.in.Perception = &d.perception
	}
	if d.Slider != nil {
		d.in.Slider = d.Slider(now)
	}
	d.Core.Step(&d.in, &d.out)
	cmd := &d.out.Command
	cmd.SessionID = d.SessionID
	d.index++
	cmd.Index = d.index
	if _, err := cmd.Marshal(d.cmdBuf[:]); err != nil {
		return fmt.Errorf("driver: command: %w", err)
	}
	if d.DropCommand == nil || !d.DropCommand(d.tick) {
		d.Board.HandlePayload(d.cmdBuf[:])
	}
	// After the command, as the real-time driver does, so that a recorder can take both payloads.
	if d.Observe != nil {
		d.Observe(&d.in, &d.out)
	}
	return nil
}

// LastSensorPayload is the sensor payload of the last Step, as the board sent it; nil when that
// tick brought none. Valid until the next Step.
func (d *Lockstep) LastSensorPayload() []byte { return d.sensorRaw }

// LastCommandPayload is the command payload the last Step sent (or would have, had DropCommand
// lost it). Valid until the next Step.
func (d *Lockstep) LastCommandPayload() []byte { return d.cmdBuf[:] }

// Run steps until ctx ends, the core reaches phase stop (if untilOff), or n ticks have run (n <= 0:
// no limit).
func (d *Lockstep) Run(ctx context.Context, n int) error {
	for i := 0; n <= 0 || i < n; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := d.Step(); err != nil {
			return err
		}
	}
	return nil
}
