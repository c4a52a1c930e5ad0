package solo12

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
)

func BenchmarkReadSensor(b *testing.B) {
	m := randomMap(rand.New(rand.NewPCG(1, 1)))
	s := syntheticSensor(AllJoints, 1.5)
	var js JointState
	b.ReportAllocs()
	for b.Loop() {
		m.ReadSensor(s, &js)
	}
}

func BenchmarkWriteCommand(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	m := randomMap(rng)
	jc := randomCommand(rng)
	var c proto.Command
	b.ReportAllocs()
	for b.Loop() {
		if w := m.WriteCommand(&jc, &c); !w.IsZero() {
			b.Fatal(w)
		}
	}
}

func BenchmarkReadCommand(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := randomMap(rng)
	jc := randomCommand(rng)
	var c proto.Command
	m.WriteCommand(&jc, &c)
	b.ReportAllocs()
	for b.Loop() {
		m.ReadCommand(&c, &jc)
	}
}

func BenchmarkWriteSensor(b *testing.B) {
	m := randomMap(rand.New(rand.NewPCG(4, 4)))
	var js JointState
	var s proto.Sensor
	b.ReportAllocs()
	for b.Loop() {
		m.WriteSensor(&js, &s)
	}
}

// BenchmarkCommandToWire is the host's whole command path: joint command to payload bytes.
func BenchmarkCommandToWire(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 5))
	m := randomMap(rng)
	jc := randomCommand(rng)
	var c proto.Command
	buf := make([]byte, proto.CommandLen)
	b.ReportAllocs()
	for b.Loop() {
		m.WriteCommand(&jc, &c)
		if _, err := c.Marshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWireToJoints is the host's whole sensor path: payload bytes to joint state.
func BenchmarkWireToJoints(b *testing.B) {
	m := randomMap(rand.New(rand.NewPCG(6, 6)))
	buf := make([]byte, proto.SensorLen)
	if err := syntheticSensor(AllJoints, 1.5).Marshal(buf); err != nil {
		b.Fatal(err)
	}
	var s proto.Sensor
	var js JointState
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
		m.ReadSensor(&s, &js)
	}
}

func BenchmarkFootKinematics(b *testing.B) {
	q := [NumJoints]float64{0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6}
	var qd [NumJoints]float64
	var pos, vel [NumLegs][3]float64
	b.ReportAllocs()
	for b.Loop() {
		FootKinematics(&q, &qd, &pos, &vel)
	}
}

func BenchmarkCalibratorStep(b *testing.B) {
	cfg := DefaultCalibration()
	cfg.Timeout = 1000 * time.Hour // the synthetic sensor never shows an index
	c, err := NewCalibrator(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := syntheticSensor(0, 0)
	var cmd proto.Command
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Step(s, &cmd); err != nil {
			b.Fatal(err)
		}
	}
}
