package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MotorCommand is one motor's PD+ reference, SI units on the motor side of the gear. The motor card
// runs I = CurrentRef + Kp*(PositionRef-pos) + Kd*(VelocityRef-vel), saturated to ISat.
type MotorCommand struct {
	PositionRef float64 // rad
	VelocityRef float64 // rad/s
	CurrentRef  float64 // A
	Kp          float64 // A/rad
	Kd          float64 // A*s/rad
	ISat        float64 // A; 0 means no saturation
}

// DriverCommand is the block for one driver, which drives two motors.
type DriverCommand struct {
	Mode  Mode
	Motor [MotorsPerDriver]MotorCommand
}

// Command is the host's 172-byte command payload.
type Command struct {
	SessionID uint16
	Drivers   [NumDrivers]DriverCommand
	Index     uint16 // command_index, +1 per command sent
}

// Motor returns the command of motor m (driver m/2, port m%2).
func (c *Command) Motor(m int) *MotorCommand { return &c.Drivers[m/2].Motor[m%2] }

// Saturation is a bit set of the command fields that Marshal had to clamp to their wire range.
type Saturation uint8

const (
	SatPosition Saturation = 1 << iota
	SatVelocity
	SatCurrent
	SatKp
	SatKd
	SatISat
)

func (s Saturation) String() string {
	if s == 0 {
		return "none"
	}
	names := [...]string{"position_ref", "velocity_ref", "current_ref", "kp", "kd", "i_sat"}
	out := ""
	for i, n := range names {
		if s&(1<<i) != 0 {
			if out != "" {
				out += ","
			}
			out += n
		}
	}
	return out
}

// Ceilings of the wire's fixed-point fields in SI units on the motor side.
var (
	MaxKp   = float64(math.MaxInt16) / (1 << 11) / radPerTurn     // A/rad
	MaxKd   = float64(math.MaxInt16) / (1 << 10) / radPerSPerKrpm // A*s/rad
	MaxISat = float64(math.MaxInt8) / (1 << 3)                    // A
)

// ErrNotFinite refuses a command holding NaN or Inf: that is a caller bug, never sent.
var ErrNotFinite = errors.New("proto: command holds NaN or Inf")

// Validate returns ErrNotFinite (naming the motor and field) if any reference or gain is not finite.
func (c *Command) Validate() error {
	// x-x is 0 for every finite x and NaN for NaN and +-Inf, so one sum checks all 72 values
	// without a branch per field; the slow loop below only runs to name the culprit.
	var probe float64
	for d := range c.Drivers {
		for p := range c.Drivers[d].Motor {
			mc := &c.Drivers[d].Motor[p]
			probe += (mc.PositionRef - mc.PositionRef) + (mc.VelocityRef - mc.VelocityRef) +
				(mc.CurrentRef - mc.CurrentRef) + (mc.Kp - mc.Kp) + (mc.Kd - mc.Kd) + (mc.ISat - mc.ISat)
		}
	}
	if probe == 0 {
		return nil
	}
	for m := range NumMotors {
		mc := c.Motor(m)
		for _, f := range [...]struct {
			v    float64
			name string
		}{
			{mc.PositionRef, "position_ref"}, {mc.VelocityRef, "velocity_ref"}, {mc.CurrentRef, "current_ref"},
			{mc.Kp, "kp"}, {mc.Kd, "kd"}, {mc.ISat, "i_sat"},
		} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return fmt.Errorf("%w: motor %d %s = %v", ErrNotFinite, m, f.name, f.v)
			}
		}
	}
	return nil
}

// Marshal validates c and writes the 172-byte payload into dst. It returns which fields were
// saturated; nothing is written when c holds NaN or Inf.
func (c *Command) Marshal(dst []byte) (Saturation, error) {
	if len(dst) != CommandLen {
		return 0, fmt.Errorf("%w: command needs %d bytes, got %d", ErrBufferSize, CommandLen, len(dst))
	}
	if err := c.Validate(); err != nil {
		return 0, err
	}
	var sat Saturation
	binary.LittleEndian.PutUint16(dst[0:], c.SessionID)
	for d := range NumDrivers {
		b := dst[2+d*driverCommandLen : 2+(d+1)*driverCommandLen]
		dc := &c.Drivers[d]
		binary.LittleEndian.PutUint16(b[0:], uint16(dc.Mode))
		for p := range MotorsPerDriver {
			mc := &dc.Motor[p]
			pos, s := toQ32(mc.PositionRef/radPerTurn, 24)
			sat |= flag(s, SatPosition)
			vel, s := toQ16(mc.VelocityRef/radPerSPerKrpm, 11)
			sat |= flag(s, SatVelocity)
			cur, s := toQ16(mc.CurrentRef, 10)
			sat |= flag(s, SatCurrent)
			kp, s := toQ16(mc.Kp*radPerTurn, 11)
			sat |= flag(s, SatKp)
			kd, s := toQ16(mc.Kd*radPerSPerKrpm, 10)
			sat |= flag(s, SatKd)
			isat, s := toQ8(mc.ISat, 3)
			sat |= flag(s, SatISat)
			binary.LittleEndian.PutUint32(b[2+4*p:], uint32(pos))
			binary.LittleEndian.PutUint16(b[10+2*p:], uint16(vel))
			binary.LittleEndian.PutUint16(b[14+2*p:], uint16(cur))
			binary.LittleEndian.PutUint16(b[18+2*p:], uint16(kp))
			binary.LittleEndian.PutUint16(b[22+2*p:], uint16(kd))
			b[26+p] = byte(isat)
		}
	}
	binary.LittleEndian.PutUint16(dst[CommandLen-2:], c.Index)
	return sat, nil
}

// Unmarshal reads a 172-byte command payload (the board's side).
func (c *Command) Unmarshal(src []byte) error {
	if len(src) != CommandLen {
		return fmt.Errorf("%w: command is %d bytes, got %d", ErrBufferSize, CommandLen, len(src))
	}
	c.SessionID = binary.LittleEndian.Uint16(src[0:])
	for d := range NumDrivers {
		b := src[2+d*driverCommandLen : 2+(d+1)*driverCommandLen]
		dc := &c.Drivers[d]
		dc.Mode = Mode(binary.LittleEndian.Uint16(b[0:]))
		for p := range MotorsPerDriver {
			mc := &dc.Motor[p]
			mc.PositionRef = fromQ(int64(int32(binary.LittleEndian.Uint32(b[2+4*p:]))), 24) * radPerTurn
			mc.VelocityRef = fromQ(int64(int16(binary.LittleEndian.Uint16(b[10+2*p:]))), 11) * radPerSPerKrpm
			mc.CurrentRef = fromQ(int64(int16(binary.LittleEndian.Uint16(b[14+2*p:]))), 10)
			mc.Kp = fromQ(int64(int16(binary.LittleEndian.Uint16(b[18+2*p:]))), 11) / radPerTurn
			mc.Kd = fromQ(int64(int16(binary.LittleEndian.Uint16(b[22+2*p:]))), 10) / radPerSPerKrpm
			mc.ISat = fromQ(int64(int8(b[26+p])), 3)
		}
	}
	c.Index = binary.LittleEndian.Uint16(src[CommandLen-2:])
	return nil
}

func flag(saturated bool, f Saturation) Saturation {
	if saturated {
		return f
	}
	return 0
}
