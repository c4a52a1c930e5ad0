package board

import (
	"math"

	"github.com/dualforce/dualforce/hw/proto"
)

// driver is one emulated dual-motor driver card as the board sees it over SPI.
type driver struct {
	cmd      proto.DriverCommand // the last command received over SPI; the card keeps applying it
	sinceCmd int                 // ticks since the last command arrived
	// spiFault is injected: every transfer fails its CRC. talked and spiOK describe this tick.
	spiFault, talked, spiOK bool
	injected                proto.ErrorCode // injected fault, reported while set
	latched                 proto.ErrorCode // the card's own error (SPI receive timeout)
	timestamp               uint16
	motor                   [proto.MotorsPerDriver]motor
}

// motor is one motor's enable, alignment and encoder state.
type motor struct {
	enabled, ready         bool
	alignLeft              int
	indexSeen, indexToggle bool
	offset                 float64 // absolute angle the encoder reads as 0
	prevAngle              float64 // absolute angle at the previous tick, to find index crossings
}

// statusBits are the status word's per-port flags.
var statusBits = [proto.MotorsPerDriver]struct{ enabled, ready, seen, toggle proto.Status }{
	{proto.StatusMotor1Enabled, proto.StatusMotor1Ready, proto.StatusIndex1Seen, proto.StatusIndex1Toggle},
	{proto.StatusMotor2Enabled, proto.StatusMotor2Ready, proto.StatusIndex2Seen, proto.StatusIndex2Toggle},
}

func (d *driver) receive(cmd *proto.DriverCommand) {
	d.cmd = *cmd
	d.sinceCmd = 0
	if !d.systemEnabled() {
		d.latched = proto.ErrNone // disabling the system is how a card's own error is cleared
	}
}

// miss is a tick whose SPI transfer failed: after the mode word's timeout the card gives up.
func (d *driver) miss() {
	d.sinceCmd++
	if t := d.cmd.Mode.TimeoutMs(); t > 0 && d.sinceCmd > t {
		d.latched = proto.ErrSPIRecvTimeout
	}
}

func (d *driver) errorCode() proto.ErrorCode {
	if d.injected != proto.ErrNone {
		return d.injected
	}
	return d.latched
}

func (d *driver) systemEnabled() bool { return d.cmd.Mode&proto.ModeEnableSystem != 0 }

// step runs the card's enable logic for one tick: a motor whose enable bit appears starts its
// rotor alignment and becomes ready alignTicks ticks later; an error disables both motors.
func (d *driver) step(alignTicks int) {
	d.timestamp++
	healthy := d.errorCode() == proto.ErrNone
	for p := range d.motor {
		m := &d.motor[p]
		want := healthy && d.systemEnabled() && d.cmd.Mode&proto.EnableMotor(p) != 0
		switch {
		case !want:
			m.enabled, m.alignLeft, m.indexSeen, m.indexToggle = false, 0, false, false
		case !m.enabled:
			m.enabled, m.alignLeft = true, alignTicks
		case m.alignLeft > 0:
			m.alignLeft--
		}
		m.ready = m.enabled && m.alignLeft == 0
	}
}

// drive is what the card applies to motor port p, in the plant's absolute frame.
func (d *driver) drive(p int) MotorDrive {
	m := &d.motor[p]
	if !m.ready {
		return MotorDrive{}
	}
	c := d.cmd.Motor[p]
	c.PositionRef += m.offset
	return MotorDrive{Enabled: true, MotorCommand: c}
}

// track follows motor port p's encoder to the new absolute angle, counting index pulses (one at
// index + 2πk for every integer k) crossed while the motor is enabled.
func (d *driver) track(p int, angle, index float64) {
	m := &d.motor[p]
	prev := m.prevAngle
	m.prevAngle = angle
	if !m.enabled {
		return
	}
	k0 := math.Floor((prev - index) / (2 * math.Pi))
	k1 := math.Floor((angle - index) / (2 * math.Pi))
	if k0 == k1 {
		return
	}
	if math.Mod(math.Abs(k1-k0), 2) == 1 {
		m.indexToggle = !m.indexToggle
	}
	if m.indexSeen {
		return
	}
	m.indexSeen = true
	if d.cmd.Mode&proto.IndexCompensation(p) != 0 {
		first := k0 // moving down, the first pulse crossed is the one at k0
		if k1 > k0 {
			first = k0 + 1
		}
		m.offset = index + 2*math.Pi*first
	}
}

// report writes the card's answer: status word and the encoder readings of its two motors.
func (d *driver) report(blk *proto.DriverSensor, readings []MotorReading) {
	var st proto.Status
	if d.systemEnabled() {
		st |= proto.StatusSystemEnabled
	}
	for p := range d.motor {
		m := &d.motor[p]
		bits := &statusBits[p]
		for _, f := range [...]struct {
			on  bool
			bit proto.Status
		}{{m.enabled, bits.enabled}, {m.ready, bits.ready}, {m.indexSeen, bits.seen}, {m.indexToggle, bits.toggle}} {
			if f.on {
				st |= f.bit
			}
		}
		blk.Position[p] = readings[p].Position - m.offset
		blk.Velocity[p] = readings[p].Velocity
		blk.Current[p] = readings[p].Current
	}
	blk.Status = st.WithError(d.errorCode())
	blk.Timestamp = d.timestamp
	blk.CoilResistance = [proto.MotorsPerDriver]float64{}
	blk.ADC = [proto.MotorsPerDriver]float64{}
}
