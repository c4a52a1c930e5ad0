package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

const turn = 2 * math.Pi

// krpm is one thousand revolutions per minute in rad/s.
const krpm = 2 * math.Pi * 1000 / 60

func TestInitAckGolden(t *testing.T) {
	in := Init{Version: 4, SessionID: 0x1234}
	var b [InitLen]byte
	if err := in.Marshal(b[:]); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x04, 0x00, 0x34, 0x12}; !bytes.Equal(b[:], want) {
		t.Fatalf("init bytes % x, want % x", b, want)
	}
	ack := Ack{Version: 4, SessionID: 0xBEEF, SPIConnected: 0x3f}
	var a [AckLen]byte
	if err := ack.Marshal(a[:]); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x04, 0x00, 0xEF, 0xBE, 0x3f}; !bytes.Equal(a[:], want) {
		t.Fatalf("ack bytes % x, want % x", a, want)
	}
	var back Ack
	if err := back.Unmarshal(a[:]); err != nil || back != ack {
		t.Fatalf("ack round trip %+v %v", back, err)
	}
}

func TestCommandGolden(t *testing.T) {
	var c Command
	c.SessionID = 0x0102
	c.Index = 0xA0B0
	// Driver 2, port 1 (motor 5) gets values whose fixed-point images are computed by hand below.
	c.Drivers[2].Mode = ModeEnableSystem | ModeEnableMotor1 | ModeEnableMotor2 | ModeIndexComp2
	c.Drivers[2].Mode = c.Drivers[2].Mode.WithTimeout(5)
	m := &c.Drivers[2].Motor[1]
	m.PositionRef = -0.3 * turn   // -0.3*2^24 = -5033164.8 -> -5033164 = 0xFFB33334
	m.VelocityRef = 0.75 * krpm   // 0.75*2^11 = 1536 = 0x0600
	m.CurrentRef = -2.5           // -2.5*2^10 = -2560 = 0xF600
	m.Kp = 1.25 / turn            // 1.25*2^11 = 2560 = 0x0A00
	m.Kd = 0.125 / krpm           // 0.125*2^10 = 128 = 0x0080
	m.ISat = 3.3                  // 3.3*8 = 26.4 -> 26 = 0x1A
	c.Drivers[0].Motor[0].Kp = 10 // far above MaxKp: saturates to 32767, never wraps

	var b [CommandLen]byte
	sat, err := c.Marshal(b[:])
	if err != nil {
		t.Fatal(err)
	}
	if sat != SatKp {
		t.Fatalf("saturation %v, want kp", sat)
	}
	want := make([]byte, CommandLen)
	want[0], want[1] = 0x02, 0x01
	want[2+18], want[2+19] = 0xff, 0x7f // driver 0 kp[0] = 32767
	blk := want[2+2*28:]
	blk[0], blk[1] = 0x05, 0xe4 // ES|EM1|EM2|EI2OC|timeout 5 = 0xE405
	copy(blk[6:10], []byte{0x34, 0x33, 0xB3, 0xFF})
	copy(blk[12:14], []byte{0x00, 0x06})
	copy(blk[16:18], []byte{0x00, 0xF6})
	copy(blk[20:22], []byte{0x00, 0x0A})
	copy(blk[24:26], []byte{0x80, 0x00})
	blk[27] = 0x1A
	want[170], want[171] = 0xB0, 0xA0
	if !bytes.Equal(b[:], want) {
		for i := range b {
			if b[i] != want[i] {
				t.Errorf("byte %d = %#02x, want %#02x", i, b[i], want[i])
			}
		}
	}

	var back Command
	if err := back.Unmarshal(b[:]); err != nil {
		t.Fatal(err)
	}
	bm := back.Motor(5)
	if back.SessionID != 0x0102 || back.Index != 0xA0B0 || back.Drivers[2].Mode != c.Drivers[2].Mode {
		t.Fatalf("header round trip: %+v", back)
	}
	if math.Abs(bm.PositionRef-m.PositionRef) > turn/(1<<24) || bm.VelocityRef != m.VelocityRef ||
		bm.CurrentRef != m.CurrentRef || bm.ISat != 26.0/8 {
		t.Fatalf("motor 5 round trip %+v", *bm)
	}
}

func TestCommandSaturationEdges(t *testing.T) {
	tests := []struct {
		name    string
		set     func(*MotorCommand)
		wantSat Saturation
		check   func(b []byte) bool // b is driver 0's block
	}{
		{"kp just under ceiling", func(m *MotorCommand) { m.Kp = MaxKp * 0.9999 }, 0,
			func(b []byte) bool { return int16(binary.LittleEndian.Uint16(b[18:])) == 32763 }},
		{"kp above ceiling", func(m *MotorCommand) { m.Kp = 2 * MaxKp }, SatKp,
			func(b []byte) bool { return int16(binary.LittleEndian.Uint16(b[18:])) == 32767 }},
		{"negative kd below floor", func(m *MotorCommand) { m.Kd = -2 * MaxKd }, SatKd,
			func(b []byte) bool { return int16(binary.LittleEndian.Uint16(b[22:])) == -32767 }},
		{"i_sat 20 A", func(m *MotorCommand) { m.ISat = 20 }, SatISat,
			func(b []byte) bool { return int8(b[26]) == 127 }},
		{"position far out", func(m *MotorCommand) { m.PositionRef = 1e6 * turn }, SatPosition,
			func(b []byte) bool { return int32(binary.LittleEndian.Uint32(b[2:])) == math.MaxInt32 }},
		{"velocity far out", func(m *MotorCommand) { m.VelocityRef = -100 * krpm }, SatVelocity,
			func(b []byte) bool { return int16(binary.LittleEndian.Uint16(b[10:])) == -32767 }},
		{"current far out", func(m *MotorCommand) { m.CurrentRef = 40 }, SatCurrent,
			func(b []byte) bool { return int16(binary.LittleEndian.Uint16(b[14:])) == 32767 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			tt.set(c.Motor(0))
			var b [CommandLen]byte
			sat, err := c.Marshal(b[:])
			if err != nil {
				t.Fatal(err)
			}
			if sat != tt.wantSat {
				t.Errorf("saturation %v, want %v", sat, tt.wantSat)
			}
			if !tt.check(b[2:30]) {
				t.Errorf("wire bytes % x", b[2:30])
			}
		})
	}
}

func TestSolo12GainCeilings(t *testing.T) {
	// The joint-side ceilings the spec quotes for N=9, kt=0.025: Kp ~5.16 Nm/rad, Kd ~0.62 Nm*s/rad.
	const n2kt = 9 * 9 * 0.025
	if kp := MaxKp * n2kt; math.Abs(kp-5.156) > 0.01 {
		t.Errorf("joint Kp ceiling %.4f", kp)
	}
	if kd := MaxKd * n2kt; math.Abs(kd-0.6188) > 0.001 {
		t.Errorf("joint Kd ceiling %.4f", kd)
	}
	if MaxISat != 15.875 {
		t.Errorf("i_sat ceiling %v", MaxISat)
	}
}

func TestCommandRefusesNonFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		var c Command
		c.Motor(7).Kd = v
		b := bytes.Repeat([]byte{0xAA}, CommandLen)
		if _, err := c.Marshal(b); !errors.Is(err, ErrNotFinite) {
			t.Fatalf("%v: err %v", v, err)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{0xAA}, CommandLen)) {
			t.Fatalf("%v: buffer written before refusing", v)
		}
	}
}

// sensorGolden builds a sensor payload byte by byte from the spec's offsets.
func sensorGolden() []byte {
	b := make([]byte, SensorLen)
	le := binary.LittleEndian
	le.PutUint16(b[0:], 0x4242)
	d3 := b[2+3*28:]
	le.PutUint16(d3[0:], uint16(StatusSystemEnabled|StatusMotor1Enabled|StatusMotor1Ready)|15)
	le.PutUint16(d3[2:], 777)
	le.PutUint32(d3[4:], uint32(int32(1<<23))) // position[0] = 0.5 turn
	le.PutUint32(d3[8:], 0xffc00000)           // position[1] = -2^22 = -0.25 turn
	le.PutUint16(d3[12:], 1)                   // velocity[0]: +1 LSB dither -> 0
	le.PutUint16(d3[14:], uint16(0xffff-1023)) // velocity[1] = -1024/2048 krpm
	le.PutUint16(d3[16:], 3072)                // current[0] = 3 A
	le.PutUint16(d3[20:], 1<<14)               // coil resistance[0] = 0.5
	le.PutUint16(d3[24:], 1<<15)               // adc[0] = 0.5
	le.PutUint16(b[170:], uint16(int16(2048))) // acc x = 1 g
	le.PutUint16(b[174:], uint16(0xffff-2047)) // acc z = -1 g
	le.PutUint16(b[176:], 1024)                // gyro x = 0.5 rad/s
	le.PutUint16(b[186:], 4096)                // yaw = 0.5 rad
	le.PutUint16(b[188:], uint16(0xffff-511))  // linacc x = -0.25 m/s^2
	le.PutUint16(b[194:], 7680)                // vbus = 24 V
	le.PutUint16(b[196:], uint16(0xffff-799))  // ishunt = -1 A
	le.PutUint32(b[198:], math.Float32bits(1000))
	le.PutUint16(b[202:], 65535)
	le.PutUint16(b[204:], 3)
	le.PutUint16(b[206:], 0x1111)
	return b
}

func TestSensorGolden(t *testing.T) {
	var s Sensor
	if err := s.Unmarshal(sensorGolden()); err != nil {
		t.Fatal(err)
	}
	d := s.Drivers[3]
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-12 }
	checks := []struct {
		name      string
		got, want float64
	}{
		{"pos0", d.Position[0], 0.5 * turn},
		{"pos1", d.Position[1], -0.25 * turn},
		{"vel0 dither", d.Velocity[0], 0},
		{"vel1", d.Velocity[1], -0.5 * krpm},
		{"cur0", d.Current[0], 3},
		{"coil0", d.CoilResistance[0], 0.5},
		{"adc0", d.ADC[0], 0.5},
		{"acc x", s.IMU.Accelerometer[0], StandardGravity},
		{"acc z", s.IMU.Accelerometer[2], -StandardGravity},
		{"gyro x", s.IMU.Gyroscope[0], 0.5},
		{"yaw", s.IMU.Attitude[2], 0.5},
		{"linacc x", s.IMU.LinearAcc[0], -0.25},
		{"vbus", s.Power.VBus, 24},
		{"ishunt", s.Power.IShunt, -1},
		{"energy", s.Power.Energy, 1000 * energyScale},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.SessionID != 0x4242 || s.SensorIndex != 65535 || s.PacketLoss != 3 || s.LastCmdIndex != 0x1111 || d.Timestamp != 777 {
		t.Errorf("counters %+v", s)
	}
	if d.Status.Error() != ErrSPICRC || !d.Status.MotorReady(0) || d.Status.MotorReady(1) {
		t.Errorf("status %v", d.Status)
	}
	if got := d.Status.String(); got != "SE M1E M1R err=SPI CRC (board could not talk to this driver)" {
		t.Errorf("status string %q", got)
	}
}

func TestSensorRoundTripWithinOneLSB(t *testing.T) {
	var s Sensor
	if err := s.Unmarshal(sensorGolden()); err != nil {
		t.Fatal(err)
	}
	s.Drivers[3].Velocity[0] = 0.3 * krpm
	var b [SensorLen]byte
	if err := s.Marshal(b[:]); err != nil {
		t.Fatal(err)
	}
	var back Sensor
	if err := back.Unmarshal(b[:]); err != nil {
		t.Fatal(err)
	}
	for m := range NumMotors {
		p0, v0, c0 := s.Motor(m)
		p1, v1, c1 := back.Motor(m)
		if math.Abs(p0-p1) > turn/(1<<24) || math.Abs(v0-v1) > krpm/(1<<11) || math.Abs(c0-c1) > 1.0/(1<<10) {
			t.Errorf("motor %d: %v %v %v -> %v %v %v", m, p0, v0, c0, p1, v1, c1)
		}
	}
	if back.IMU != s.IMU || back.SensorIndex != s.SensorIndex {
		t.Errorf("imu/counters changed: %+v vs %+v", back.IMU, s.IMU)
	}
}

func TestLinearAccelerationWrapsLikeFirmware(t *testing.T) {
	var s Sensor
	s.IMU.LinearAcc[0] = 17 // beyond the +-16 the Q11 field can hold
	var b [SensorLen]byte
	if err := s.Marshal(b[:]); err != nil {
		t.Fatal(err)
	}
	var back Sensor
	_ = back.Unmarshal(b[:])
	if got := back.IMU.LinearAcc[0]; got != 17-32 {
		t.Errorf("wrapped linear acceleration %v, want -15", got)
	}
}

func TestParsePayloadMalformed(t *testing.T) {
	good := func(n int) []byte {
		f := make([]byte, FrameLen(n))
		if _, err := PutFrame(f, MAC{2, 0, 0, 0, 0, 1}, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	withLen := func(f []byte, n uint16) []byte { binary.LittleEndian.PutUint16(f[14:], n); return f }
	tests := []struct {
		name  string
		frame []byte
		want  error
		kind  Kind
	}{
		{"empty", nil, ErrShortFrame, 0},
		{"short header", make([]byte, 15), ErrShortFrame, 0},
		{"wrong ethertype", func() []byte { f := good(4); f[12] = 0x08; f[13] = 0x00; return f }(), ErrEtherType, 0},
		{"length field beyond frame", withLen(good(172)[:100], 172), ErrLengthField, 0},
		{"length field 0xffff", withLen(good(4), 0xffff), ErrLengthField, 0},
		{"unknown length", withLen(good(100), 100), ErrPayloadLength, 0},
		{"zero length", withLen(good(4), 0), ErrPayloadLength, 0},
		{"v3 ack", withLen(good(5), 3), ErrProtocolV3, 0},
		{"v3 sensor", withLen(good(208), 200), ErrProtocolV3, 0},
		{"init", good(4), nil, KindInit},
		{"ack", good(5), nil, KindAck},
		{"command", good(172), nil, KindCommand},
		{"sensor", good(208), nil, KindSensor},
		{"sensor with trailing padding", append(good(208), 0, 0, 0), nil, KindSensor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, p, err := ParsePayload(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if kind != tt.kind {
				t.Fatalf("kind %v, want %v", kind, tt.kind)
			}
			if err == nil {
				if n, _ := KindOfLength(len(p)); n != kind {
					t.Fatalf("payload of %d bytes for %v", len(p), kind)
				}
			}
		})
	}
}

func TestUnmarshalWrongSizes(t *testing.T) {
	for _, n := range []int{0, 3, 4, 5, 171, 173, 199, 200, 207, 209} {
		b := make([]byte, n)
		if n != InitLen {
			if err := new(Init).Unmarshal(b); !errors.Is(err, ErrBufferSize) {
				t.Errorf("init of %d bytes: %v", n, err)
			}
		}
		if n != AckLen {
			if err := new(Ack).Unmarshal(b); !errors.Is(err, ErrBufferSize) {
				t.Errorf("ack of %d bytes: %v", n, err)
			}
		}
		if n != CommandLen {
			if err := new(Command).Unmarshal(b); !errors.Is(err, ErrBufferSize) {
				t.Errorf("command of %d bytes: %v", n, err)
			}
		}
		err := new(Sensor).Unmarshal(b)
		switch {
		case n == 200 && !errors.Is(err, ErrProtocolV3):
			t.Errorf("v3-sized sensor: %v", err)
		case n != 200 && n != SensorLen && !errors.Is(err, ErrBufferSize):
			t.Errorf("sensor of %d bytes: %v", n, err)
		}
	}
}

func TestFrameLayout(t *testing.T) {
	f := make([]byte, MaxFrameLen)
	for i := range f {
		f[i] = 0xEE
	}
	src := MAC{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	n, err := PutFrame(f, src, []byte{4, 0, 7, 0})
	if err != nil || n != MinFrameLen {
		t.Fatalf("n=%d err=%v", n, err)
	}
	want := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x88, 0xB5, 0x04, 0x00, 4, 0, 7, 0},
		make([]byte, MinFrameLen-20)...)
	if !bytes.Equal(f[:n], want) {
		t.Fatalf("frame % x", f[:n])
	}
	if got, _ := SourceMAC(f); got != src || got.String() != "02:11:22:33:44:55" {
		t.Fatalf("source %v", got)
	}
	if _, err := PutFrame(make([]byte, 63), src, []byte{1, 2, 3, 4}); !errors.Is(err, ErrBufferSize) {
		t.Fatalf("short buffer: %v", err)
	}
}

func TestModeWord(t *testing.T) {
	m := (ModeEnableSystem | EnableMotor(1) | IndexCompensation(0)).WithTimeout(300)
	if m != 0xA8FF || m.TimeoutMs() != 255 {
		t.Fatalf("mode %#04x timeout %d", uint16(m), m.TimeoutMs())
	}
	if ErrorCode(9).String() != "unassigned code 9" {
		t.Fatal(ErrorCode(9).String())
	}
}
