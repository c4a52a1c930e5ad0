package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dualforce/dualforce/hw/proto"
)

// MotorStatus is one motor's flags from its driver's status word.
type MotorStatus struct {
	Motor                     int // 0..11 (driver = Motor/2)
	Enabled, Ready, IndexSeen bool
}

func (m MotorStatus) String() string {
	switch {
	case !m.Enabled:
		return fmt.Sprintf("motor %d disabled", m.Motor)
	case !m.Ready:
		return fmt.Sprintf("motor %d aligning", m.Motor)
	case m.IndexSeen:
		return fmt.Sprintf("motor %d ready, index seen", m.Motor)
	}
	return fmt.Sprintf("motor %d ready", m.Motor)
}

// DriverStatus is one driver's status word decoded for people.
type DriverStatus struct {
	Driver        int
	Connected     bool // answered the board's SPI autodetection
	SystemEnabled bool
	Motors        [proto.MotorsPerDriver]MotorStatus
	Error         proto.ErrorCode
}

// DecodeDriver decodes driver d's status word; connected is the ack's spi_connected bit set.
func DecodeDriver(d int, st proto.Status, connected bool) DriverStatus {
	ds := DriverStatus{Driver: d, Connected: connected, SystemEnabled: st&proto.StatusSystemEnabled != 0, Error: st.Error()}
	for p := range ds.Motors {
		ds.Motors[p] = MotorStatus{Motor: 2*d + p, Enabled: st.MotorEnabled(p), Ready: st.MotorReady(p), IndexSeen: st.IndexSeen(p)}
	}
	return ds
}

func (d DriverStatus) String() string {
	if !d.Connected {
		return fmt.Sprintf("driver %d: not connected (did not answer SPI autodetection)", d.Driver)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "driver %d: ", d.Driver)
	if !d.SystemEnabled {
		b.WriteString("system disabled; ")
	}
	fmt.Fprintf(&b, "%v; %v; error: %v", d.Motors[0], d.Motors[1], d.Error)
	return b.String()
}

// Drivers decodes every driver's status from a sensor packet of this session.
func (s *Session) Drivers(in *proto.Sensor) [proto.NumDrivers]DriverStatus {
	var out [proto.NumDrivers]DriverStatus
	for d := range out {
		out[d] = DecodeDriver(d, in.Drivers[d].Status, s.connected&(1<<d) != 0)
	}
	return out
}

// DriverError is a driver reporting an error code.
type DriverError struct {
	Status DriverStatus
}

func (e *DriverError) Error() string {
	d := e.Status
	return fmt.Sprintf("host: driver %d (motors %d and %d) reports error %d, %v: %s", d.Driver,
		d.Motors[0].Motor, d.Motors[1].Motor, uint8(d.Error), d.Error, errorHint(d.Error))
}

func errorHint(e proto.ErrorCode) string {
	switch e {
	case proto.ErrSPICRC:
		return "the board's SPI transfers to this driver fail; check the driver's ribbon cable and its power"
	case proto.ErrSPIRecvTimeout:
		return "the driver got no SPI command within the timeout of its mode word; it disabled its motors " +
			"(clear by sending the system-enable bit low)"
	case proto.ErrCriticalTemp:
		return "let the motors and driver cool down"
	case proto.ErrEncoder1, proto.ErrEncoder2:
		return "check that encoder's cable and connector"
	case proto.ErrPositionRollover:
		return "the position left the encoder's range with error-on-rollover set"
	}
	return "see the udriver firmware's error list"
}

// CheckDrivers returns a *DriverError for each connected driver that reports an error, joined;
// nil when all are healthy. Use errors.As to get the first.
func (s *Session) CheckDrivers(in *proto.Sensor) error {
	var errs []error
	for _, d := range s.Drivers(in) {
		if d.Connected && d.Error != proto.ErrNone {
			errs = append(errs, &DriverError{Status: d})
		}
	}
	return errors.Join(errs...)
}
