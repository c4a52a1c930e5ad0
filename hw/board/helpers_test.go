package board

import (
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

// recordingPlant is the first-order plant plus a record of what the drivers applied last tick and
// an IMU whose gyroscope counts ticks, so that a frozen IMU is visible.
type recordingPlant struct {
	*FirstOrderPlant
	lastDrive [proto.NumMotors]MotorDrive
	steps     int
}

func (p *recordingPlant) Step(drive *[proto.NumMotors]MotorDrive) {
	p.lastDrive = *drive
	p.steps++
	p.FirstOrderPlant.Step(drive)
}

func (p *recordingPlant) ReadIMU(out *proto.IMU) {
	p.FirstOrderPlant.ReadIMU(out)
	out.Gyroscope[2] = float64(p.steps) * 1e-3
}

func newBoard(t testing.TB, cfg Config, initial [proto.NumMotors]float64) (*Board, *recordingPlant) {
	t.Helper()
	fo, err := NewFirstOrderPlant(FirstOrderConfig{InitialPosition: initial})
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingPlant{FirstOrderPlant: fo}
	b, err := New(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}

func initPayload(version, session uint16) []byte {
	var buf [proto.InitLen]byte
	in := proto.Init{Version: version, SessionID: session}
	_ = in.Marshal(buf[:])
	return buf[:]
}

func commandPayload(t testing.TB, c *proto.Command) []byte {
	t.Helper()
	var buf [proto.CommandLen]byte
	if _, err := c.Marshal(buf[:]); err != nil {
		t.Fatal(err)
	}
	return buf[:]
}

// idleCommand is a command of session s with index i that enables nothing.
func idleCommand(t testing.TB, s, i uint16) []byte {
	c := proto.Command{SessionID: s, Index: i}
	return commandPayload(t, &c)
}

// tickSending ticks n times and fails unless every tick sent a payload of length want (0: none).
func tickSending(t *testing.T, b *Board, n, want int) {
	t.Helper()
	for i := range n {
		if got := len(b.Tick()); got != want {
			t.Fatalf("tick %d of %d (state %v) sent %d bytes, want %d", i+1, n, b.State(), got, want)
		}
	}
}

func decodeSensor(t testing.TB, p []byte) *proto.Sensor {
	t.Helper()
	var s proto.Sensor
	if err := s.Unmarshal(p); err != nil {
		t.Fatalf("sensor packet: %v", err)
	}
	return &s
}

// activeBoard is a board in ACTIVE_CONTROL for session 7 after its first command (index 0).
func activeBoard(t *testing.T, cfg Config, initial [proto.NumMotors]float64) (*Board, *recordingPlant) {
	t.Helper()
	b, p := newBoard(t, cfg, initial)
	b.HandlePayload(initPayload(proto.Version, 7))
	for b.State() != StateSendingInitAck {
		b.Tick()
	}
	b.HandlePayload(idleCommand(t, 7, 0))
	if b.State() != StateActiveControl {
		t.Fatalf("state %v after the first command", b.State())
	}
	return b, p
}

// enableCommand enables the system and both motors of every driver with the given gains and the
// index compensation bits when compensate is set.
func enableCommand(s, i uint16, kp, kd float64, compensate bool) proto.Command {
	c := proto.Command{SessionID: s, Index: i}
	for d := range c.Drivers {
		c.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
		if compensate {
			c.Drivers[d].Mode |= proto.ModeIndexComp1 | proto.ModeIndexComp2
		}
	}
	for m := range proto.NumMotors {
		*c.Motor(m) = proto.MotorCommand{Kp: kp, Kd: kd}
	}
	return c
}

// onWire is c as the board decodes it: fixed-point quantised.
func onWire(t testing.TB, c *proto.Command) *proto.Command {
	t.Helper()
	var back proto.Command
	if err := back.Unmarshal(commandPayload(t, c)); err != nil {
		t.Fatal(err)
	}
	return &back
}

// holdCommand sends c (with a fresh index) before each of n ticks, as a host at 1 kHz does.
func holdCommand(t *testing.T, b *Board, c *proto.Command, n int) {
	t.Helper()
	for range n {
		c.Index++
		b.HandlePayload(commandPayload(t, c))
		if len(b.Tick()) != proto.SensorLen {
			t.Fatalf("no sensor packet in state %v", b.State())
		}
	}
}
