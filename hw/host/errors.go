package host

import (
	"errors"
	"fmt"
)

// Conditions callers branch on.
var (
	// ErrNoAnswer means the board never answered an init: wrong interface, cable, power or a
	// board that ignores our protocol version silently. The returned error says which interface.
	ErrNoAnswer = errors.New("host: no answer from the master board")
	// ErrSensorTimeout means no valid sensor packet arrived within the sensor timeout (50 ms).
	ErrSensorTimeout = errors.New("host: sensor packets stopped")
	// ErrCommandsIgnored means the board's sensor packets stopped acknowledging our commands
	// (last_cmd_index) for longer than the sensor timeout: its 20 ms watchdog has most likely put
	// it in ERROR, motors disabled. Only a new session (a new Session and Connect) recovers.
	ErrCommandsIgnored = errors.New("host: the board ignores our commands")
	// ErrNotConnected is returned by Send and Receive before Connect or Listen succeeded.
	ErrNotConnected = errors.New("host: session not connected (call Connect or Listen first)")
	// ErrListener is returned by Send on a listener session, which never sends.
	ErrListener = errors.New("host: a listener session does not send commands")
)

// OtherSessionError means the board is busy with another session while we tried to connect.
type OtherSessionError struct {
	Interface    string
	Ours, Theirs uint16
	// Acked is true when the board acknowledged the other session's init (another host is
	// connecting at the same time, or died right after its init: the board gives up on it 1 s
	// after its ack); false when it streams the other session's sensor packets (another program
	// controls the robot).
	Acked bool
}

func (e *OtherSessionError) Error() string {
	if e.Acked {
		return fmt.Sprintf("host: the master board on %s acknowledged session %d, not ours (%d): "+
			"another program is connecting to it; stop it, or retry in a second if it died", e.Interface, e.Theirs, e.Ours)
	}
	return fmt.Sprintf("host: the master board on %s is controlled by session %d, not ours (%d): "+
		"stop the other program (or monitor it with a listener session), then retry", e.Interface, e.Theirs, e.Ours)
}
