package board

import (
	"errors"
	"fmt"

	"github.com/dualforce/dualforce/hw/proto"
)

// ErrNoSuchDriver is returned by fault injection for a driver index outside 0..5.
var ErrNoSuchDriver = errors.New("board: no such driver (want 0..5)")

func checkDriver(d int) error {
	if d < 0 || d >= proto.NumDrivers {
		return fmt.Errorf("%w: %d", ErrNoSuchDriver, d)
	}
	return nil
}

// SetDriverError makes driver d report code (0 clears it). A driver in error disables both its
// motors; once cleared, they must be enabled again and re-align.
func (b *Board) SetDriverError(d int, code proto.ErrorCode) error {
	if err := checkDriver(d); err != nil {
		return err
	}
	if code > proto.ErrSPICRC {
		return fmt.Errorf("board: error code %d does not fit the status word's 4 bits", code)
	}
	b.drivers[d].injected = code
	return nil
}

// SetSPIFault makes every SPI transfer with driver d fail its CRC (or work again). The board then
// zeroes the driver's sensor block and reports error 15; the card itself keeps applying its last
// command until its own timeout (mode word bits 7..0) disables it with error 2. A driver failing
// during autodetection is left out of the session.
func (b *Board) SetSPIFault(d int, failing bool) error {
	if err := checkDriver(d); err != nil {
		return err
	}
	b.drivers[d].spiFault = failing
	return nil
}

// SetIMUFrozen makes the IMU repeat its last reading, as a hung IMU UART does.
func (b *Board) SetIMUFrozen(frozen bool) { b.imuFrozen = frozen }

// SetLinkUp reports a change of the Ethernet PHY link. Losing it enters LINK_DOWN (ignored in
// WAITING_FOR_INIT, as the firmware does); while down, nothing is received or sent. Regaining it
// from LINK_DOWN enters ERROR: the host must init a new session.
func (b *Board) SetLinkUp(up bool) {
	b.linkUp = up
	switch {
	case !up && b.state != StateWaitingForInit:
		b.state = StateLinkDown
	case up && b.state == StateLinkDown:
		b.state = StateError
	}
}
