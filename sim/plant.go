package sim

import (
	"log/slog"

	"github.com/dualforce/dualforce/hw/board"
)

// BoardPlant is a Robot seen as the physics behind an emulated master board (board.Plant).
// board.Plant has no error path, so the first Step error (a non-finite command, which the board
// never forwards, or a MuJoCo divergence) is logged once and latched: the robot then stays
// frozen, its readings unchanged, and Err reports why.
type BoardPlant struct {
	*Robot
	log *slog.Logger
	err error
}

// NewBoardPlant wraps r; log receives the one error report (nil means slog.Default()).
func NewBoardPlant(r *Robot, log *slog.Logger) *BoardPlant {
	if log == nil {
		log = slog.Default()
	}
	return &BoardPlant{Robot: r, log: log}
}

// Step advances the robot by one 1 ms tick unless an earlier step failed.
func (p *BoardPlant) Step(drive *[NumMotors]board.MotorDrive) {
	if p.err != nil {
		return
	}
	if err := p.Robot.Step(drive); err != nil {
		p.err = err
		p.log.Error("simulated robot stopped", "err", err, "sim_time_s", p.Robot.Time())
	}
}

// Err is the error that froze the robot, or nil.
func (p *BoardPlant) Err() error { return p.err }
