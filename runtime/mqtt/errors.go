package mqtt

import "errors"

// Reasons a command is rejected. Every rejection wraps exactly one of these;
// its text (with the detail) is what the reply's "error" field carries and
// Code gives the short form the rejection event carries.
var (
	ErrMalformed      = errors.New("malformed")
	ErrUnknownCommand = errors.New("unknown command")
	ErrRetained       = errors.New("retained command")
	ErrExpired        = errors.New("expired")
	ErrUnknownSkill   = errors.New("unknown skill")
	ErrOutOfRange     = errors.New("out of range")
	ErrDuplicate      = errors.New("duplicate command id")
	ErrOperatorAbsent = errors.New("operator absent")
	ErrBusy           = errors.New("runtime busy")
	ErrRejectedByCore = errors.New("rejected by the runtime")
)

// Configuration and start-up errors.
var (
	ErrConfig       = errors.New("mqtt configuration")
	ErrInsecureBind = errors.New("embedded broker on a non-loopback address needs credentials")
	ErrCredentials  = errors.New("mqtt credentials")
	ErrNotConnected = errors.New("not connected to the broker")
	ErrNoReply      = errors.New("no reply from the robot")
	// ErrCommandRejected is what an Operator returns when the robot
	// answered a command with ok false.
	ErrCommandRejected = errors.New("command rejected")
	ErrNoRetainedYet   = errors.New("robot has not published this state")
)

var rejectionCodes = []struct {
	err  error
	code string
}{
	{ErrMalformed, "malformed"},
	{ErrUnknownCommand, "unknown_command"},
	{ErrRetained, "retained"},
	{ErrExpired, "expired"},
	{ErrUnknownSkill, "unknown_skill"},
	{ErrOutOfRange, "out_of_range"},
	{ErrDuplicate, "duplicate"},
	{ErrOperatorAbsent, "operator_absent"},
	{ErrBusy, "busy"},
	{ErrRejectedByCore, "runtime"},
}

// Code is the short machine-readable form of a rejection.
func Code(err error) string {
	for _, rc := range rejectionCodes {
		if errors.Is(err, rc.err) {
			return rc.code
		}
	}
	return "rejected"
}
