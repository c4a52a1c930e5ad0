package board

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/dualforce/dualforce/hw/proto"
)

// State is the board's communication state.
type State uint8

const (
	StateWaitingForInit State = iota // boot: sends nothing, drivers get zero commands
	StateSPIAutodetect               // init received: probes the drivers, sends sensor packets
	StateSendingInitAck              // autodetect done: sends an ack every tick until the first command
	StateActiveControl               // drivers get the latest command, sensor packets every tick
	StateError                       // PC silent too long: motors disabled until an init
	StateLinkDown                    // Ethernet PHY link lost: sends nothing
)

func (s State) String() string {
	switch s {
	case StateWaitingForInit:
		return "WAITING_FOR_INIT"
	case StateSPIAutodetect:
		return "SPI_AUTODETECT"
	case StateSendingInitAck:
		return "SENDING_INIT_ACK"
	case StateActiveControl:
		return "ACTIVE_CONTROL"
	case StateError:
		return "ERROR"
	case StateLinkDown:
		return "LINK_DOWN"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Config describes the emulated board. Zero fields take the firmware's values.
type Config struct {
	// Version is the protocol version the firmware speaks (default proto.Version). A board of
	// another version answers every init with an ack naming its own version and ignores it. Version
	// 3 emulates a v3 board: 3-byte acks and 200-byte sensor packets (no power-board block). A real
	// v3 board ignores a v4 init silently; this one accepts it so that the host's v3 detection can
	// be exercised.
	Version uint16
	// AbsentDrivers has bit i set when driver card i is not wired (it never answers SPI).
	AbsentDrivers uint8
	// AutodetectTicks is how many ticks SPI_AUTODETECT lasts (default 51: the firmware's "more
	// than 50 SPI transactions").
	AutodetectTicks int
	// ControlTimeoutTicks: the tick after this many consecutive ticks without a command in
	// ACTIVE_CONTROL enters ERROR (default 20: "no command for more than 20 ms").
	ControlTimeoutTicks int
	// AckTimeoutTicks: the same for SENDING_INIT_ACK waiting for the first command (default 1000).
	AckTimeoutTicks int
	// AlignmentTicks is how long a motor's rotor alignment takes after its enable bit is first
	// seen, before the ready bit (default 100).
	AlignmentTicks int
	// IndexAngle is the absolute motor angle (rad, taken mod 2π) of each encoder's index pulse.
	IndexAngle [proto.NumMotors]float64
	// IMUStartupTicks is how many ticks after power-on the IMU reports all zeros, as a real one
	// does until it has started.
	IMUStartupTicks int
	// BusVoltage is what the power board reports (V, default 24).
	BusVoltage float64
}

const (
	v3AckLen    = 3
	v3SensorLen = 200
	// powerBlock is where the sensor packet's power-board block sits: v3 packets lack it.
	powerBlockStart, powerBlockEnd = 194, 202
	allDrivers                     = 1<<proto.NumDrivers - 1
)

// zeroCommand is what the firmware sends its drivers outside ACTIVE_CONTROL: the system stays
// enabled, motors disabled, every reference and gain zero (mode 0x8000).
var zeroCommand = proto.DriverCommand{Mode: proto.ModeEnableSystem}

// Board is the emulated master board. It is not safe for concurrent use: one goroutine feeds it
// payloads and ticks it.
type Board struct {
	cfg   Config
	plant Plant

	state     State
	linkUp    bool
	sessionID uint16
	// stateTicks counts ticks in SPI_AUTODETECT; silentTicks counts ticks without a command in
	// SENDING_INIT_ACK and ACTIVE_CONTROL.
	stateTicks, silentTicks int
	connected               uint8 // drivers that answered SPI during autodetect
	latest                  proto.Command
	prevCmdIndex            uint16
	ticks                   uint64

	drivers   [proto.NumDrivers]driver
	drive     [proto.NumMotors]MotorDrive
	readings  [proto.NumMotors]MotorReading
	imu       proto.IMU
	imuFrozen bool

	// ack and sensor are the packets the firmware keeps and sends: entering SENDING_INIT_ACK
	// writes the session into both, so until then sensor packets carry the previous session.
	ack     proto.Ack
	sensor  proto.Sensor
	out     [proto.SensorLen]byte
	scratch [proto.SensorLen]byte
	reply   [proto.AckLen]byte
}

// New returns a powered-on board in WAITING_FOR_INIT with its link up. It reads the plant once:
// the encoders count from the rotors' power-on angles.
func New(cfg Config, plant Plant) (*Board, error) {
	if plant == nil {
		return nil, errors.New("board: nil plant")
	}
	for _, f := range []struct {
		v    *int
		def  int
		name string
	}{
		{&cfg.AutodetectTicks, 51, "autodetect ticks"}, {&cfg.ControlTimeoutTicks, 20, "control timeout ticks"},
		{&cfg.AckTimeoutTicks, 1000, "ack timeout ticks"}, {&cfg.AlignmentTicks, 100, "alignment ticks"},
	} {
		if *f.v < 0 {
			return nil, fmt.Errorf("board: %s must not be negative, got %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if cfg.IMUStartupTicks < 0 {
		return nil, fmt.Errorf("board: IMU startup ticks must not be negative, got %d", cfg.IMUStartupTicks)
	}
	if cfg.Version == 0 {
		cfg.Version = proto.Version
	}
	if cfg.BusVoltage == 0 {
		cfg.BusVoltage = 24
	}
	if !(cfg.BusVoltage > 0) || math.IsInf(cfg.BusVoltage, 0) {
		return nil, fmt.Errorf("board: bus voltage must be positive and finite, got %v", cfg.BusVoltage)
	}
	for m, a := range cfg.IndexAngle {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, fmt.Errorf("board: index angle of motor %d is %v", m, a)
		}
	}
	b := &Board{cfg: cfg, plant: plant, linkUp: true}
	plant.ReadMotors(&b.readings)
	for m, r := range b.readings {
		mo := &b.drivers[m/2].motor[m%2]
		mo.offset, mo.prevAngle = r.Position, r.Position
	}
	b.sensor.Power.VBus = cfg.BusVoltage
	return b, nil
}

// State is the current communication state.
func (b *Board) State() State { return b.state }

// SessionID is the session the board accepts commands from (0 before the first init). Its sensor
// packets carry it only from the ack on: during SPI_AUTODETECT they still name the previous one.
func (b *Board) SessionID() uint16 { return b.sessionID }

// SPIConnected has bit i set for each driver that answered during the last SPI autodetection.
func (b *Board) SPIConnected() uint8 { return b.connected }

// Ticks is how many ticks the board has run since power-on.
func (b *Board) Ticks() uint64 { return b.ticks }

// HandlePayload processes one received payload (the bytes after the frame header). Payloads of
// unknown length are ignored, like everything the state machine does not expect. The reply is
// nil except for the ack a board of another protocol version sends at once to every init; it
// stays valid until the next HandlePayload.
func (b *Board) HandlePayload(p []byte) (reply []byte) {
	if !b.linkUp {
		return nil
	}
	switch len(p) {
	case proto.InitLen:
		return b.handleInit(p)
	case proto.CommandLen:
		b.handleCommand(p)
	}
	return nil
}

func (b *Board) handleInit(p []byte) []byte {
	if b.state != StateWaitingForInit && b.state != StateError {
		return nil
	}
	var in proto.Init
	if in.Unmarshal(p) != nil {
		return nil
	}
	if b.cfg.Version != 3 && in.Version != b.cfg.Version {
		// The firmware answers from its ack packet, with the init's id written in: spi_connected
		// stays what the last acknowledged session saw.
		b.ack.Version, b.ack.SessionID = b.cfg.Version, in.SessionID
		_ = b.ack.Marshal(b.reply[:])
		return b.reply[:]
	}
	// Any id starts a session, 0 and the id of the session that just failed included: the
	// firmware checks none. Its sensor packets keep the previous id until the ack.
	b.sessionID = in.SessionID
	b.state = StateSPIAutodetect
	b.stateTicks = 0
	b.connected = 0
	return nil
}

func (b *Board) handleCommand(p []byte) {
	if b.state != StateSendingInitAck && b.state != StateActiveControl {
		return
	}
	if binary.LittleEndian.Uint16(p) != b.sessionID {
		return
	}
	if b.latest.Unmarshal(p) != nil {
		return
	}
	if b.state == StateSendingInitAck {
		b.state = StateActiveControl
		b.prevCmdIndex = b.latest.Index - 1
	}
	b.sensor.PacketLoss += b.latest.Index - b.prevCmdIndex - 1 // u16 arithmetic, like the firmware
	b.sensor.LastCmdIndex = b.latest.Index
	b.prevCmdIndex = b.latest.Index
	b.silentTicks = 0
}

// Tick runs one millisecond: state timeouts, one SPI exchange with every driver, 1 ms of plant
// physics, and returns the payload the board sends this tick (nil when it sends nothing). The
// returned slice stays valid until the next Tick.
func (b *Board) Tick() []byte {
	b.ticks++
	b.advanceState()
	b.exchangeSPI()
	b.plant.Step(&b.drive)
	b.plant.ReadMotors(&b.readings)
	b.readIMU()
	b.updateEncoders()
	b.fillDriverBlocks()
	if !b.linkUp {
		return nil
	}
	switch b.state {
	case StateSendingInitAck:
		return b.ackPacket()
	case StateSPIAutodetect, StateActiveControl, StateError:
		return b.sensorPacket()
	}
	return nil
}

func (b *Board) advanceState() {
	switch b.state {
	case StateSPIAutodetect:
		b.stateTicks++
		if b.stateTicks > b.cfg.AutodetectTicks {
			b.enterSendingInitAck()
		}
	case StateSendingInitAck:
		b.silentTicks++
		if b.silentTicks > b.cfg.AckTimeoutTicks {
			b.state = StateError
		}
	case StateActiveControl:
		b.silentTicks++
		if b.silentTicks > b.cfg.ControlTimeoutTicks {
			b.state = StateError
		}
	}
}

// enterSendingInitAck is where the firmware stamps the new session on what it sends: the ack,
// and the sensor packets, whose sensor_index and packet_loss restart at 0.
func (b *Board) enterSendingInitAck() {
	b.state = StateSendingInitAck
	b.silentTicks = 0
	b.ack = proto.Ack{Version: b.cfg.Version, SessionID: b.sessionID, SPIConnected: b.connected}
	b.sensor.SessionID = b.sessionID
	b.sensor.SensorIndex = 0
	b.sensor.PacketLoss = 0
}

// exchangeSPI sends each wired driver its command for this tick and notes which answered.
func (b *Board) exchangeSPI() {
	probing := b.state == StateSPIAutodetect
	for d := range b.drivers {
		dr := &b.drivers[d]
		bit := uint8(1) << d
		dr.talked = b.cfg.AbsentDrivers&bit == 0 && (probing || b.connected&bit != 0)
		dr.spiOK = dr.talked && !dr.spiFault
		cmd := &zeroCommand
		if b.state == StateActiveControl {
			cmd = &b.latest.Drivers[d]
		}
		if dr.spiOK {
			dr.receive(cmd)
			if probing {
				b.connected |= bit
			}
		} else {
			dr.miss()
		}
		dr.step(b.cfg.AlignmentTicks)
		for p := range proto.MotorsPerDriver {
			b.drive[2*d+p] = dr.drive(p)
		}
	}
}

func (b *Board) readIMU() {
	switch {
	case b.ticks <= uint64(b.cfg.IMUStartupTicks):
		b.imu = proto.IMU{}
	case !b.imuFrozen:
		b.plant.ReadIMU(&b.imu)
	}
}

func (b *Board) updateEncoders() {
	for m := range b.readings {
		b.drivers[m/2].track(m%2, b.readings[m].Position, b.cfg.IndexAngle[m])
	}
}

// fillDriverBlocks writes this tick's driver answers into the sensor packet. A failed transfer
// zeroes the block and sets error code 15; a driver the board does not talk to keeps its block.
func (b *Board) fillDriverBlocks() {
	for d := range b.drivers {
		dr := &b.drivers[d]
		blk := &b.sensor.Drivers[d]
		switch {
		case dr.spiOK:
			dr.report(blk, b.readings[2*d:2*d+2])
		case dr.talked:
			*blk = proto.DriverSensor{Status: proto.Status(0).WithError(proto.ErrSPICRC)}
		}
	}
	b.sensor.IMU = b.imu
}

func (b *Board) ackPacket() []byte {
	if b.cfg.Version == 3 {
		binary.LittleEndian.PutUint16(b.out[0:], b.ack.SessionID)
		b.out[2] = b.ack.SPIConnected
		return b.out[:v3AckLen]
	}
	_ = b.ack.Marshal(b.out[:proto.AckLen])
	return b.out[:proto.AckLen]
}

func (b *Board) sensorPacket() []byte {
	b.sensor.SensorIndex++
	if b.cfg.Version == 3 {
		_ = b.sensor.Marshal(b.scratch[:])
		n := copy(b.out[:], b.scratch[:powerBlockStart])
		n += copy(b.out[n:], b.scratch[powerBlockEnd:])
		return b.out[:n]
	}
	_ = b.sensor.Marshal(b.out[:])
	return b.out[:]
}
