package proto

import (
	"strconv"
	"strings"
)

// Mode is a driver command's mode word.
type Mode uint16

// Mode bits. Timeout bits 7..0 hold the driver's own command timeout in ms (0 = none).
const (
	ModeEnableSystem Mode = 1 << 15 // ES
	ModeEnableMotor1 Mode = 1 << 14 // EM1: enabling runs rotor alignment
	ModeEnableMotor2 Mode = 1 << 13 // EM2
	ModeErrorOnRoll  Mode = 1 << 12 // EPRE: error on position rollover
	ModeIndexComp1   Mode = 1 << 11 // EI1OC: position jumps to 0 at the first index
	ModeIndexComp2   Mode = 1 << 10 // EI2OC
	modeTimeoutMask  Mode = 0x00ff
)

// EnableMotor returns the enable bit of motor port 0 or 1.
func EnableMotor(port int) Mode { return ModeEnableMotor1 >> port }

// IndexCompensation returns the index-offset-compensation bit of motor port 0 or 1.
func IndexCompensation(port int) Mode { return ModeIndexComp1 >> port }

// WithTimeout returns m with the driver timeout set to ms milliseconds (saturating at 255).
func (m Mode) WithTimeout(ms int) Mode {
	return m&^modeTimeoutMask | Mode(min(max(ms, 0), 255))
}

// TimeoutMs is the driver timeout in milliseconds; 0 means none.
func (m Mode) TimeoutMs() int { return int(m & modeTimeoutMask) }

// Status is a driver sensor block's status word.
type Status uint16

// Status bits; bits 3..0 hold an ErrorCode.
const (
	StatusSystemEnabled Status = 1 << 15 // SE
	StatusMotor1Enabled Status = 1 << 14 // M1E
	StatusMotor1Ready   Status = 1 << 13 // M1R
	StatusMotor2Enabled Status = 1 << 12 // M2E
	StatusMotor2Ready   Status = 1 << 11 // M2R
	StatusIndex1Seen    Status = 1 << 10 // IDX1D
	StatusIndex2Seen    Status = 1 << 9  // IDX2D
	StatusIndex1Toggle  Status = 1 << 8  // IDX1T
	StatusIndex2Toggle  Status = 1 << 7  // IDX2T
	statusErrorMask     Status = 0x000f
)

// MotorEnabled reports the enable bit of motor port 0 or 1.
func (s Status) MotorEnabled(port int) bool {
	return s&([2]Status{StatusMotor1Enabled, StatusMotor2Enabled}[port&1]) != 0
}

// MotorReady reports that motor port 0 or 1 finished alignment and follows commands.
func (s Status) MotorReady(port int) bool {
	return s&([2]Status{StatusMotor1Ready, StatusMotor2Ready}[port&1]) != 0
}

// IndexSeen reports that motor port 0 or 1 has passed its encoder index since enabling.
func (s Status) IndexSeen(port int) bool {
	return s&([2]Status{StatusIndex1Seen, StatusIndex2Seen}[port&1]) != 0
}

// IndexToggle is the bit that flips each time motor port 0 or 1 passes its index.
func (s Status) IndexToggle(port int) bool {
	return s&([2]Status{StatusIndex1Toggle, StatusIndex2Toggle}[port&1]) != 0
}

// Error is the driver's error code.
func (s Status) Error() ErrorCode { return ErrorCode(s & statusErrorMask) }

// WithError returns s with its error code replaced.
func (s Status) WithError(e ErrorCode) Status { return s&^statusErrorMask | Status(e)&statusErrorMask }

// String lists the set flags and the error by name, e.g. "SE M1E M1R err=none".
func (s Status) String() string {
	var b strings.Builder
	for _, f := range []struct {
		bit  Status
		name string
	}{
		{StatusSystemEnabled, "SE"}, {StatusMotor1Enabled, "M1E"}, {StatusMotor1Ready, "M1R"},
		{StatusMotor2Enabled, "M2E"}, {StatusMotor2Ready, "M2R"}, {StatusIndex1Seen, "IDX1D"},
		{StatusIndex2Seen, "IDX2D"}, {StatusIndex1Toggle, "IDX1T"}, {StatusIndex2Toggle, "IDX2T"},
	} {
		if s&f.bit != 0 {
			b.WriteString(f.name)
			b.WriteByte(' ')
		}
	}
	b.WriteString("err=")
	b.WriteString(s.Error().String())
	return b.String()
}

// ErrorCode is a driver's error code (status bits 3..0).
type ErrorCode uint8

const (
	ErrNone             ErrorCode = 0
	ErrEncoder1         ErrorCode = 1
	ErrSPIRecvTimeout   ErrorCode = 2
	ErrCriticalTemp     ErrorCode = 3
	ErrPositionConvert  ErrorCode = 4
	ErrPositionRollover ErrorCode = 5
	ErrEncoder2         ErrorCode = 6
	ErrOther            ErrorCode = 7
	ErrSPICRC           ErrorCode = 15 // set by the board: the SPI transfer to the driver failed its CRC
)

func (e ErrorCode) String() string {
	switch e {
	case ErrNone:
		return "none"
	case ErrEncoder1:
		return "encoder 1"
	case ErrSPIRecvTimeout:
		return "SPI receive timeout"
	case ErrCriticalTemp:
		return "critical temperature"
	case ErrPositionConvert:
		return "position convert"
	case ErrPositionRollover:
		return "position rollover"
	case ErrEncoder2:
		return "encoder 2"
	case ErrOther:
		return "other"
	case ErrSPICRC:
		return "SPI CRC (board could not talk to this driver)"
	}
	return "unassigned code " + strconv.Itoa(int(e))
}
