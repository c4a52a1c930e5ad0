package proto

import (
	"testing"
)

func benchCommand() Command {
	var c Command
	c.SessionID = 7
	for m := range NumMotors {
		mc := c.Motor(m)
		*mc = MotorCommand{PositionRef: 1.1 * float64(m), VelocityRef: 3, CurrentRef: 0.5, Kp: 1.5, Kd: 0.05, ISat: 8}
	}
	for d := range c.Drivers {
		c.Drivers[d].Mode = ModeEnableSystem | ModeEnableMotor1 | ModeEnableMotor2
	}
	return c
}

// BenchmarkCommandEncodeDecode is the host's send plus the board's receive of one command frame.
func BenchmarkCommandEncodeDecode(b *testing.B) {
	c := benchCommand()
	var frame [MaxFrameLen]byte
	var back Command
	src := MAC{2, 0, 0, 0, 0, 1}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Index = uint16(i)
		if _, err := c.Marshal(PayloadBuffer(frame[:], CommandLen)); err != nil {
			b.Fatal(err)
		}
		n, _ := PutHeader(frame[:], src, CommandLen)
		_, p, err := ParsePayload(frame[:n])
		if err != nil {
			b.Fatal(err)
		}
		if err := back.Unmarshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSensorEncodeDecode is the board's send plus the host's receive of one sensor frame.
func BenchmarkSensorEncodeDecode(b *testing.B) {
	var s Sensor
	if err := s.Unmarshal(sensorGolden()); err != nil {
		b.Fatal(err)
	}
	var frame [MaxFrameLen]byte
	var back Sensor
	src := MAC{2, 0, 0, 0, 0, 2}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Marshal(PayloadBuffer(frame[:], SensorLen)); err != nil {
			b.Fatal(err)
		}
		n, _ := PutHeader(frame[:], src, SensorLen)
		_, p, err := ParsePayload(frame[:n])
		if err != nil {
			b.Fatal(err)
		}
		if err := back.Unmarshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	c := benchCommand()
	var s Sensor
	_ = s.Unmarshal(sensorGolden())
	var cb [CommandLen]byte
	var sb [SensorLen]byte
	if n := testing.AllocsPerRun(100, func() {
		_, _ = c.Marshal(cb[:])
		_ = c.Unmarshal(cb[:])
		_ = s.Marshal(sb[:])
		_ = s.Unmarshal(sb[:])
	}); n != 0 {
		t.Fatalf("%v allocations per encode/decode", n)
	}
}
