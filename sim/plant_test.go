package sim

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
)

var _ board.Plant = (*BoardPlant)(nil)

// The simulated robot behind the emulated board firmware, driven by wire-format payloads:
// init, autodetect, ack, enable, alignment, then PD control to a pose. The host reads the pose
// back from sensor packets through the joint map, with the encoder offsets the board applied at
// power-on (the robot powered on in the standing pose).
func TestRobotBehindBoard(t *testing.T) {
	r := newRobot(t, Config{FixedBase: true})
	plant := NewBoardPlant(r, slog.New(slog.DiscardHandler))
	b, err := board.New(board.Config{}, plant)
	if err != nil {
		t.Fatal(err)
	}
	var buf [proto.CommandLen]byte
	in := proto.Init{Version: proto.Version, SessionID: 7}
	if err := in.Marshal(buf[:proto.InitLen]); err != nil {
		t.Fatal(err)
	}
	b.HandlePayload(buf[:proto.InitLen])
	for i := 0; b.State() != board.StateSendingInitAck; i++ {
		if i > 1000 {
			t.Fatalf("board stuck in %v", b.State())
		}
		b.Tick()
	}

	target := StandingPose()
	for leg := range solo12.NumLegs {
		target[solo12.Leg(leg).Joint(solo12.HFE)] += 0.3
		target[solo12.Leg(leg).Joint(solo12.KFE)] -= 0.3
	}
	host := solo12.Map{Offset: StandingPose()}
	jc := solo12.JointCommand{Q: target}
	for j := range jc.Kp {
		jc.Kp[j], jc.Kd[j], jc.ISat[j] = testKp, testKd, solo12.MaxCurrent
	}
	c := proto.Command{SessionID: 7}
	for d := range c.Drivers {
		c.Drivers[d].Mode = (proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2).WithTimeout(5)
	}
	if w := host.WriteCommand(&jc, &c); !w.IsZero() {
		t.Fatal(w)
	}
	var sensor proto.Sensor
	for k := range 1500 {
		c.Index = uint16(k)
		if _, err := c.Marshal(buf[:]); err != nil {
			t.Fatal(err)
		}
		b.HandlePayload(buf[:])
		out := b.Tick()
		if err := sensor.Unmarshal(out); err != nil {
			t.Fatalf("tick %d (state %v): %v", k, b.State(), err)
		}
	}
	if b.State() != board.StateActiveControl || plant.Err() != nil {
		t.Fatalf("board %v, plant error %v", b.State(), plant.Err())
	}
	var js solo12.JointState
	host.ReadSensor(&sensor, &js)
	var q, qd joints
	r.Joints(&q, &qd)
	for j := range q {
		// Wire quantisation: Q24 turns of the motor is far below 1e-4 rad at the joint.
		if math.Abs(js.Q[j]-q[j]) > 1e-4 {
			t.Errorf("%s: host reads %.5f, robot is at %.5f", solo12.Joint(j), js.Q[j], q[j])
		}
		if math.Abs(q[j]-target[j]) > 0.03 {
			t.Errorf("%s: at %.4f, target %.4f", solo12.Joint(j), q[j], target[j])
		}
	}
	if g := sensor.IMU.Accelerometer[2]; math.Abs(g-proto.StandardGravity) > 0.01 {
		t.Errorf("IMU over the wire reads %g m/s^2 on z, want 1 g", g)
	}
}

func TestBoardPlantLatchesErrors(t *testing.T) {
	r := newRobot(t, Config{})
	var logged bytes.Buffer
	plant := NewBoardPlant(r, slog.New(slog.NewTextHandler(&logged, nil)))
	var drive [NumMotors]board.MotorDrive
	plant.Step(&drive)
	if plant.Err() != nil || r.Time() == 0 {
		t.Fatalf("good step: err %v, time %g", plant.Err(), r.Time())
	}
	drive[0].CurrentRef = math.Inf(-1)
	plant.Step(&drive)
	if !errors.Is(plant.Err(), ErrNonFiniteDrive) {
		t.Fatalf("Err = %v", plant.Err())
	}
	frozen := r.Time()
	drive[0].CurrentRef = 0
	plant.Step(&drive)
	plant.Step(&drive)
	if r.Time() != frozen {
		t.Fatal("robot kept moving after an error")
	}
	if n := strings.Count(logged.String(), "simulated robot stopped"); n != 1 {
		t.Fatalf("logged %d times: %s", n, logged.String())
	}
}
