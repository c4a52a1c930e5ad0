package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/driver"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/skills"
)

// sessionID is the host session the lockstep driver opens on the simulated board.
const sessionID = 0xe7a1

// Default timing of the run-up to a skill: the core's stand-up move, then how long it holds the
// default pose before the operator's "run": the runtime's own auto-run settle, so that the
// robot starts a skill as collection and evaluation did.
const (
	DefaultStandUp = 2 * time.Second
	DefaultSettle  = core.DefaultSettle
)

// Rig is one simulated Solo12 behind its master board, driven in lockstep by the runtime core:
// the deployed controller against the simulator, one millisecond per Step.
type Rig struct {
	Robot  *robotboard.Robot
	Core   *core.Core
	Driver *driver.Lockstep

	sample  perception.Datagram
	period  time.Duration
	standUp time.Duration // the core's stand-up move
	perStep int           // link ticks per policy step
}

// New powers the simulated robot on, builds a core for bank (offsets calibration with the
// robot's power-on joint angles, every other setting from core.DefaultConfig, then tweak) and
// connects the lockstep driver. Navigation banks get the robot's perception. Close frees it.
func New(bank *skills.Bank, robot robotboard.Config, tweak func(*core.Config)) (*Rig, error) {
	if robot.Logger == nil {
		robot.Logger = slog.New(slog.DiscardHandler)
	}
	loaded, err := core.Load(bank, "rig", 1)
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	rb, err := robotboard.New(robot)
	if err != nil {
		return nil, fmt.Errorf("rig: %w", err)
	}
	cfg := core.DefaultConfig(bank)
	cfg.Calibration = core.CalibrateOffsets
	cfg.Offsets = rb.JointOffsets()
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := core.New(cfg, loaded)
	if err != nil {
		rb.Close()
		return nil, fmt.Errorf("rig: %w", err)
	}
	r := &Rig{Robot: rb, Core: c, period: robotboard.DefaultPerceptionPeriod * time.Millisecond, standUp: cfg.StandUp, perStep: bank.Contract.LinkTicksPerPolicyStep()}
	r.Driver = &driver.Lockstep{Core: c, Board: rb.Board(), SessionID: sessionID}
	if _, ok := bank.Contract.Layout.Field(skills.FieldHeightMap); ok {
		r.Driver.Perception = r.perceive
	}
	if err := r.Driver.Connect(); err != nil {
		rb.Close()
		return nil, fmt.Errorf("rig: %w", err)
	}
	return r, nil
}

// Close frees the simulation.
func (r *Rig) Close() error { return r.Robot.Close() }

// perceive is the perception stream of a robot: a fresh sample every period, held in between.
func (r *Rig) perceive(now time.Duration, p *core.Perception) {
	if p.Valid && now%r.period != 0 {
		return
	}
	r.Robot.Perceive(&r.sample)
	p.Valid = true
	p.Position, p.Yaw, p.HeightMap = r.sample.Position, r.sample.Yaw, r.sample.Heights
}

// Step advances the robot and the core by one millisecond.
func (r *Rig) Step() error {
	if err := r.Driver.Step(); err != nil {
		return fmt.Errorf("rig: %w", err)
	}
	if err := r.Robot.Err(); err != nil {
		return fmt.Errorf("rig: simulation: %w", err)
	}
	return nil
}

// ErrNotReached reports a rig that did not get where it was asked to within the tick budget.
var ErrNotReached = errors.New("rig: condition not reached")

// Until steps until cond holds (checked before every step), for at most limit ticks.
func (r *Rig) Until(ctx context.Context, limit int, cond func() bool) error {
	for i := range limit {
		if cond() {
			return nil
		}
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := r.Step(); err != nil {
			return err
		}
	}
	if cond() {
		return nil
	}
	return fmt.Errorf("%w in %d ticks: phase %v, fault %q", ErrNotReached, limit, r.Core.Phase(), r.Core.Fault())
}

// Command hands the core an operator command, taken at its next policy tick.
func (r *Rig) Command(cmd corebus.Command) error {
	if !r.Core.OfferCommand(cmd) {
		return fmt.Errorf("rig: the core's command queue is full")
	}
	return nil
}
