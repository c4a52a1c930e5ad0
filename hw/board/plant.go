package board

import (
	"fmt"
	"math"

	"github.com/dualforce/dualforce/hw/proto"
)

// MotorDrive is what one motor card applies during a tick. The references are in the plant's
// absolute motor-angle frame (the Board has already removed the encoder offset). A disabled
// motor carries no current.
type MotorDrive struct {
	Enabled bool
	proto.MotorCommand
}

// MotorReading is one motor's state: absolute motor angle (rad), velocity (rad/s) and the current
// the card drives (A).
type MotorReading struct {
	Position, Velocity, Current float64
}

// Plant is the physics behind the board. Step advances it by 1 ms, during which the plant runs
// the motor cards' 10 kHz PD+ loop itself:
//
//	I = clip(I_ref + kp*(θ_ref-θ) + kd*(ω_ref-ω), ±i_sat)   (no clipping when i_sat is 0)
//
// ReadMotors and ReadIMU report the state after the last Step.
type Plant interface {
	Step(drive *[proto.NumMotors]MotorDrive)
	ReadMotors(out *[proto.NumMotors]MotorReading)
	ReadIMU(out *proto.IMU)
}

// PDCurrent is the motor card's PD+ law with its saturation: the current a card drives for one
// command at angle pos and velocity vel. Plants use it so they all saturate alike.
func PDCurrent(c *proto.MotorCommand, pos, vel float64) float64 {
	i := c.CurrentRef + c.Kp*(c.PositionRef-pos) + c.Kd*(c.VelocityRef-vel)
	if c.ISat > 0 {
		i = math.Max(-c.ISat, math.Min(c.ISat, i))
	}
	return i
}

// FirstOrderConfig describes a FirstOrderPlant. Zero fields take the defaults below.
type FirstOrderConfig struct {
	Inertia        float64 // rotor plus reflected load inertia, kg*m^2 (default 2e-5)
	Damping        float64 // viscous friction, N*m*s/rad (default 2e-5)
	TorqueConstant float64 // N*m/A (default 0.025, Solo12's motors)
	// InitialPosition is each rotor's absolute angle at power-on (rad).
	InitialPosition [proto.NumMotors]float64
}

// FirstOrderPlant is twelve independent rotors, J*dω/dt = kt*I - b*ω, with no gravity and no
// coupling, integrated at the motor cards' 10 kHz. Its IMU reports a board at rest and level.
type FirstOrderPlant struct {
	cfg     FirstOrderConfig
	motors  [proto.NumMotors]MotorReading
	substep float64
}

const (
	plantSubsteps = 10 // 10 kHz card loop in a 1 ms tick
	tickSeconds   = 1e-3
)

// NewFirstOrderPlant validates cfg, fills in defaults and returns the plant at rest.
func NewFirstOrderPlant(cfg FirstOrderConfig) (*FirstOrderPlant, error) {
	for _, f := range []struct {
		v    *float64
		def  float64
		name string
	}{
		{&cfg.Inertia, 2e-5, "inertia"}, {&cfg.Damping, 2e-5, "damping"}, {&cfg.TorqueConstant, 0.025, "torque constant"},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if !(*f.v > 0) || math.IsInf(*f.v, 0) {
			return nil, fmt.Errorf("board: first-order plant %s must be positive and finite, got %v", f.name, *f.v)
		}
	}
	p := &FirstOrderPlant{cfg: cfg, substep: tickSeconds / plantSubsteps}
	for m, q := range cfg.InitialPosition {
		if math.IsNaN(q) || math.IsInf(q, 0) {
			return nil, fmt.Errorf("board: first-order plant initial position of motor %d is %v", m, q)
		}
		p.motors[m].Position = q
	}
	return p, nil
}

// Step integrates 1 ms with semi-implicit Euler at 10 kHz.
func (p *FirstOrderPlant) Step(drive *[proto.NumMotors]MotorDrive) {
	h, j, b, kt := p.substep, p.cfg.Inertia, p.cfg.Damping, p.cfg.TorqueConstant
	for m := range p.motors {
		s := &p.motors[m]
		d := &drive[m]
		for range plantSubsteps {
			s.Current = 0
			if d.Enabled {
				s.Current = PDCurrent(&d.MotorCommand, s.Position, s.Velocity)
			}
			s.Velocity += h * (kt*s.Current - b*s.Velocity) / j
			s.Position += h * s.Velocity
		}
	}
}

// ReadMotors copies the rotors' state.
func (p *FirstOrderPlant) ReadMotors(out *[proto.NumMotors]MotorReading) { *out = p.motors }

// ReadIMU reports a level board at rest: only gravity on the accelerometer.
func (p *FirstOrderPlant) ReadIMU(out *proto.IMU) {
	*out = proto.IMU{Accelerometer: [3]float64{0, 0, proto.StandardGravity}}
}
