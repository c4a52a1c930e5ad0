package solo12

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

func TestJointTable(t *testing.T) {
	// The rows restate the spec's motor_numbers and reverse_polarities joint by joint.
	tests := []struct {
		name                string
		motor, driver, port int
		polarity            float64
		kind                JointKind
		leg                 Leg
		limit               float64
	}{
		{"FL_HAA", 0, 0, 0, +1, HAA, FL, 0.9},
		{"FL_HFE", 3, 1, 1, -1, HFE, FL, 1.45},
		{"FL_KFE", 2, 1, 0, -1, KFE, FL, 2.8},
		{"FR_HAA", 1, 0, 1, -1, HAA, FR, 0.9},
		{"FR_HFE", 5, 2, 1, +1, HFE, FR, 1.45},
		{"FR_KFE", 4, 2, 0, +1, KFE, FR, 2.8},
		{"HL_HAA", 6, 3, 0, +1, HAA, HL, 0.9},
		{"HL_HFE", 9, 4, 1, -1, HFE, HL, 1.45},
		{"HL_KFE", 8, 4, 0, -1, KFE, HL, 2.8},
		{"HR_HAA", 7, 3, 1, -1, HAA, HR, 0.9},
		{"HR_HFE", 11, 5, 1, +1, HFE, HR, 1.45},
		{"HR_KFE", 10, 5, 0, +1, KFE, HR, 2.8},
	}
	if len(tests) != NumJoints {
		t.Fatalf("table has %d rows", len(tests))
	}
	var motors [proto.NumMotors]bool
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, ok := JointByName(tc.name)
			if !ok || j != Joint(i) || j.String() != tc.name {
				t.Fatalf("JointByName(%q) = %v, %v; want index %d", tc.name, j, ok, i)
			}
			if j.Motor() != tc.motor || j.Driver() != tc.driver || j.Port() != tc.port {
				t.Errorf("motor/driver/port = %d/%d/%d, want %d/%d/%d",
					j.Motor(), j.Driver(), j.Port(), tc.motor, tc.driver, tc.port)
			}
			if j.Polarity() != tc.polarity || ReversePolarities()[j] != (tc.polarity < 0) {
				t.Errorf("polarity = %v, want %v", j.Polarity(), tc.polarity)
			}
			if j.Kind() != tc.kind || j.Leg() != tc.leg || tc.leg.Joint(tc.kind) != j {
				t.Errorf("kind/leg = %v/%v, want %v/%v", j.Kind(), j.Leg(), tc.kind, tc.leg)
			}
			if j.PositionLimit() != tc.limit || PositionLimits()[j] != tc.limit {
				t.Errorf("limit = %v, want %v", j.PositionLimit(), tc.limit)
			}
			if back, ok := JointOfMotor(tc.motor); !ok || back != j {
				t.Errorf("JointOfMotor(%d) = %v, %v", tc.motor, back, ok)
			}
			if MotorNumbers()[j] != tc.motor {
				t.Errorf("MotorNumbers()[%d] = %d", j, MotorNumbers()[j])
			}
		})
		motors[tc.motor] = true
	}
	for m, used := range motors {
		if !used {
			t.Errorf("motor %d drives no joint", m)
		}
	}
	if _, ok := JointOfMotor(12); ok {
		t.Error("JointOfMotor(12) found a joint")
	}
	if _, ok := JointByName("FL_ABC"); ok {
		t.Error("JointByName found a bogus joint")
	}
	if Joint(-1).String() != "joint?" || Joint(12).Valid() || Leg(4).String() != "leg?" {
		t.Error("out-of-range joint or leg not reported as such")
	}
}

func TestJointSet(t *testing.T) {
	s := JointSet(0).With(FLHAA).With(HRKFE).With(Joint(99))
	if s.Len() != 2 || !s.Has(FLHAA) || !s.Has(HRKFE) || s.Has(FRHAA) || s.Has(Joint(-3)) {
		t.Fatalf("set %b", s)
	}
	if got := s.String(); got != "FL_HAA,HR_KFE" {
		t.Errorf("String = %q", got)
	}
	if JointSet(0).String() != "none" || AllJoints.Len() != NumJoints {
		t.Error("empty or full set misreported")
	}
}

func TestSafetyDefaults(t *testing.T) {
	// The spec rounds the ceilings to 5.16 Nm/rad, 0.62 Nm*s/rad and 15.875 A.
	for _, tc := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"MaxJointKp", MaxJointKp, 5.16, 0.005},
		{"MaxJointKd", MaxJointKd, 0.62, 0.005},
		{"MaxISat", MaxISat, 15.875, 0},
		{"MaxCurrent", MaxCurrent, 8, 0},
		{"MaxJointVelocity", MaxJointVelocity, 80, 0},
		{"SafetyDamping", SafetyDamping, 0.2, 0},
	} {
		if math.Abs(tc.got-tc.want) > tc.tol {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// Wire resolution of each command field in joint units: Q24 turns, Q11 krpm, Q10 A, Q11 A/turn,
// Q10 A/krpm, Q3 A; the encoder truncates, so a round trip loses less than one of these.
var (
	lsbQ    = 2 * math.Pi / (1 << 24) / GearRatio
	lsbQd   = 2 * math.Pi * 1000 / 60 / (1 << 11) / GearRatio
	lsbTau  = torquePerAmp / (1 << 10)
	lsbKp   = gainScale / (1 << 11) / (2 * math.Pi)
	lsbKd   = gainScale / (1 << 10) / (2 * math.Pi * 1000 / 60)
	lsbISat = 1.0 / (1 << 3)
)

func randomMap(rng *rand.Rand) Map {
	var m Map
	for j := range m.Offset {
		m.Offset[j] = (rng.Float64()*2 - 1) * math.Pi / GearRatio
	}
	return m
}

func randomCommand(rng *rand.Rand) JointCommand {
	var jc JointCommand
	for j := range NumJoints {
		u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
		jc.Q[j] = u(-Joint(j).PositionLimit(), Joint(j).PositionLimit())
		jc.Qd[j] = u(-MaxJointVelocity, MaxJointVelocity) / 2 // the wire's Q11 krpm tops out near 150 rad/s joint
		jc.Tau[j] = u(-MaxCurrent, MaxCurrent) * torquePerAmp
		jc.Kp[j] = u(0, MaxJointKp)
		jc.Kd[j] = u(0, MaxJointKd)
		jc.ISat[j] = u(0, MaxISat)
	}
	return jc
}

func TestCommandRoundTripThroughWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, proto.CommandLen)
	exact, total := 0, 0
	for trial := range 2000 {
		m := randomMap(rng)
		in := randomCommand(rng)
		var c proto.Command
		if w := m.WriteCommand(&in, &c); !w.IsZero() {
			t.Fatalf("trial %d: in-range command warned: %v", trial, w)
		}
		sat, err := c.Marshal(buf)
		if err != nil || sat != 0 {
			t.Fatalf("trial %d: Marshal: sat %v err %v", trial, sat, err)
		}
		var back proto.Command
		if err := back.Unmarshal(buf); err != nil {
			t.Fatal(err)
		}
		var out JointCommand
		m.ReadCommand(&back, &out)
		for j := range Joint(NumJoints) {
			for _, f := range []struct {
				name         string
				in, out, lsb float64
			}{
				{"q", in.Q[j], out.Q[j], lsbQ}, {"qd", in.Qd[j], out.Qd[j], lsbQd},
				{"tau", in.Tau[j], out.Tau[j], lsbTau}, {"kp", in.Kp[j], out.Kp[j], lsbKp},
				{"kd", in.Kd[j], out.Kd[j], lsbKd}, {"i_sat", in.ISat[j], out.ISat[j], lsbISat},
			} {
				// 1e-12 covers float rounding of the offset, far below every LSB.
				if d := math.Abs(f.in - f.out); d >= f.lsb+1e-12 {
					t.Fatalf("trial %d %v %s: in %v out %v, |diff| %.3g >= LSB %.3g", trial, j, f.name, f.in, f.out, d, f.lsb)
				}
			}
		}
		// Decoding the wire and encoding again moves no field by more than one LSB: the encoder
		// truncates, so a value that comes back 1 ulp low drops to the next integer.
		var again proto.Command
		m.WriteCommand(&out, &again)
		buf2 := make([]byte, proto.CommandLen)
		if _, err := again.Marshal(buf2); err != nil {
			t.Fatal(err)
		}
		var reread proto.Command
		if err := reread.Unmarshal(buf2); err != nil {
			t.Fatal(err)
		}
		for mot := range proto.NumMotors {
			a, b := back.Motor(mot), reread.Motor(mot)
			if !closeMotorLSB(*a, *b) {
				t.Fatalf("trial %d motor %d: wire -> joint -> wire moved more than one LSB:\n%+v\n%+v", trial, mot, *a, *b)
			}
			exact += boolInt(*a == *b)
			total++
		}
	}
	t.Logf("wire -> joint -> wire: %d of %d motor blocks bit-exact, the rest within one LSB", exact, total)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// closeMotorLSB compares two decoded motor blocks to one wire LSB per field, in motor units.
func closeMotorLSB(a, b proto.MotorCommand) bool {
	// 1e-12 absorbs the float error of subtracting two values of up to a few hundred.
	ok := func(x, y, lsb float64) bool { return math.Abs(x-y) <= lsb+1e-12 }
	return ok(a.PositionRef, b.PositionRef, lsbQ*GearRatio) && ok(a.VelocityRef, b.VelocityRef, lsbQd*GearRatio) &&
		ok(a.CurrentRef, b.CurrentRef, lsbTau/torquePerAmp) && ok(a.Kp, b.Kp, lsbKp/gainScale) &&
		ok(a.Kd, b.Kd, lsbKd/gainScale) && ok(a.ISat, b.ISat, lsbISat)
}

func TestCommandConversionPerJoint(t *testing.T) {
	// One joint at a time, so a swapped motor number or polarity shows up on the motor it hits.
	m := Map{}
	m.Offset[HLKFE] = 0.1
	for j := range Joint(NumJoints) {
		var jc JointCommand
		jc.Q[j], jc.Qd[j], jc.Tau[j], jc.Kp[j], jc.Kd[j], jc.ISat[j] = 0.5, 2, 0.45, 2.025, 0.2025, 8
		var c proto.Command
		m.WriteCommand(&jc, &c)
		for mot := range proto.NumMotors {
			mc := c.Motor(mot)
			if mot != j.Motor() {
				if *mc != (proto.MotorCommand{PositionRef: mc.PositionRef}) || (mc.PositionRef != 0 && mot != HLKFE.Motor()) {
					t.Errorf("%v: motor %d got %+v", j, mot, *mc)
				}
				continue
			}
			p := j.Polarity()
			want := proto.MotorCommand{
				PositionRef: p * (0.5 - m.Offset[j]) * 9, VelocityRef: p * 18, CurrentRef: p * 2,
				Kp: 1, Kd: 0.1, ISat: 8,
			}
			if !closeMotor(*mc, want, 1e-12) {
				t.Errorf("%v: motor %d = %+v, want %+v", j, mot, *mc, want)
			}
		}
	}
}

func closeMotor(a, b proto.MotorCommand, tol float64) bool {
	return math.Abs(a.PositionRef-b.PositionRef) <= tol && math.Abs(a.VelocityRef-b.VelocityRef) <= tol &&
		math.Abs(a.CurrentRef-b.CurrentRef) <= tol && math.Abs(a.Kp-b.Kp) <= tol &&
		math.Abs(a.Kd-b.Kd) <= tol && math.Abs(a.ISat-b.ISat) <= tol
}

func TestReadSensorPerJoint(t *testing.T) {
	m := Map{}
	for j := range m.Offset {
		m.Offset[j] = 0.01 * float64(j)
	}
	for j := range Joint(NumJoints) {
		var s proto.Sensor
		d := &s.Drivers[j.Driver()]
		d.Position[j.Port()], d.Velocity[j.Port()], d.Current[j.Port()] = 9, 18, 1
		var js JointState
		m.ReadSensor(&s, &js)
		for k := range Joint(NumJoints) {
			wantQ, wantQd, wantTau := m.Offset[k], 0.0, 0.0
			if k == j {
				p := j.Polarity()
				wantQ, wantQd, wantTau = p+m.Offset[k], 2*p, 0.225*p
			}
			if math.Abs(js.Q[k]-wantQ) > 1e-15 || math.Abs(js.Qd[k]-wantQd) > 1e-15 || math.Abs(js.Tau[k]-wantTau) > 1e-15 {
				t.Errorf("motor of %v set: %v reads q %v qd %v tau %v, want %v %v %v",
					j, k, js.Q[k], js.Qd[k], js.Tau[k], wantQ, wantQd, wantTau)
			}
		}
	}
}

func TestSensorRoundTripThroughWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, proto.SensorLen)
	for trial := range 2000 {
		m := randomMap(rng)
		var in JointState
		for j := range NumJoints {
			in.Q[j] = (rng.Float64()*2 - 1) * Joint(j).PositionLimit()
			in.Qd[j] = (rng.Float64()*2 - 1) * 40
			in.Tau[j] = (rng.Float64()*2 - 1) * MaxCurrent * torquePerAmp
		}
		var s proto.Sensor
		m.WriteSensor(&in, &s)
		if err := s.Marshal(buf); err != nil {
			t.Fatal(err)
		}
		var back proto.Sensor
		if err := back.Unmarshal(buf); err != nil {
			t.Fatal(err)
		}
		var out JointState
		m.ReadSensor(&back, &out)
		for j := range NumJoints {
			// The decoder reports a raw velocity of +-1 LSB as 0, hence 2 LSB for qd.
			if math.Abs(in.Q[j]-out.Q[j]) >= lsbQ+1e-12 || math.Abs(in.Qd[j]-out.Qd[j]) >= 2*lsbQd ||
				math.Abs(in.Tau[j]-out.Tau[j]) >= lsbTau+1e-12 {
				t.Fatalf("trial %d joint %d: in %v %v %v out %v %v %v", trial, j,
					in.Q[j], in.Qd[j], in.Tau[j], out.Q[j], out.Qd[j], out.Tau[j])
			}
		}
	}
}

func TestGainCeilings(t *testing.T) {
	tests := []struct {
		name         string
		kp, kd, isat float64
		warn         GainWarning
		wantKp       float64 // motor side
		wireSat      proto.Saturation
	}{
		{"typical", 4, 0.15, 8, GainWarning{}, 4 / gainScale, 0},
		{"exact ceilings", MaxJointKp, MaxJointKd, MaxISat, GainWarning{}, proto.MaxKp, 0},
		{"kp just above", 5.2, 0.1, 8, GainWarning{Kp: 1 << FRKFE}, proto.MaxKp, 0},
		{"kd above", 3, 0.7, 8, GainWarning{Kd: 1 << FRKFE}, 3 / gainScale, 0},
		{"i_sat above", 3, 0.1, 16, GainWarning{ISat: 1 << FRKFE}, 3 / gainScale, 0},
		{"negative kp", -1, 0.1, 8, GainWarning{Kp: 1 << FRKFE}, 0, 0},
		{"all above", 50, 5, 100, GainWarning{Kp: 1 << FRKFE, Kd: 1 << FRKFE, ISat: 1 << FRKFE}, proto.MaxKp, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var jc JointCommand
			jc.Kp[FRKFE], jc.Kd[FRKFE], jc.ISat[FRKFE] = tc.kp, tc.kd, tc.isat
			var c proto.Command
			w := (&Map{}).WriteCommand(&jc, &c)
			if w != tc.warn {
				t.Fatalf("warning %+v, want %+v", w, tc.warn)
			}
			if got := c.Motor(FRKFE.Motor()).Kp; math.Abs(got-tc.wantKp) > 1e-12 {
				t.Errorf("motor kp %v, want %v", got, tc.wantKp)
			}
			buf := make([]byte, proto.CommandLen)
			sat, err := c.Marshal(buf)
			if err != nil {
				t.Fatal(err)
			}
			if sat&(proto.SatKp|proto.SatKd|proto.SatISat) != tc.wireSat {
				t.Errorf("wire saturation %v after clamping", sat)
			}
			var back proto.Command
			if err := back.Unmarshal(buf); err != nil {
				t.Fatal(err)
			}
			got := back.Motor(FRKFE.Motor())
			if got.Kp < 0 || got.Kd < 0 || got.ISat < 0 {
				t.Errorf("gains wrapped negative on the wire: %+v", got)
			}
			if tc.warn.IsZero() {
				if w.Err() != nil {
					t.Errorf("Err() = %v for a zero warning", w.Err())
				}
				return
			}
			err = w.Err()
			if !errors.Is(err, ErrGainCeiling) {
				t.Errorf("errors.Is(%v, ErrGainCeiling) is false", err)
			}
			var gw GainWarning
			if !errors.As(err, &gw) || gw != tc.warn {
				t.Errorf("errors.As gave %+v", gw)
			}
			if !strings.Contains(err.Error(), "FR_KFE") {
				t.Errorf("message %q does not name the joint", err)
			}
		})
	}
}

func TestConversionsDoNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randomMap(rng)
	jc := randomCommand(rng)
	jc.Kp[0] = 9 // a warning must not allocate either
	var c proto.Command
	var decoded JointCommand
	var s proto.Sensor
	var js JointState
	var w GainWarning
	allocs := testing.AllocsPerRun(100, func() {
		w = m.WriteCommand(&jc, &c)
		m.ReadCommand(&c, &decoded)
		m.ReadSensor(&s, &js)
		m.WriteSensor(&js, &s)
		_ = IndexSeen(&s) | Ready(&s) | DriverFaults(&s)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run", allocs)
	}
	if w.IsZero() {
		t.Error("over-ceiling Kp not reported")
	}
}

func TestStatusSets(t *testing.T) {
	var s proto.Sensor
	s.Drivers[HRKFE.Driver()].Status = proto.StatusMotor1Enabled | proto.StatusMotor1Ready | proto.StatusIndex1Seen // port 0 of driver 5
	s.Drivers[FLHAA.Driver()].Status = proto.StatusMotor2Enabled | proto.StatusIndex2Seen
	s.Drivers[HLHFE.Driver()].Status = proto.Status(0).WithError(proto.ErrSPICRC)
	if got, want := IndexSeen(&s), JointSet(0).With(HRKFE).With(FRHAA); got != want {
		t.Errorf("IndexSeen = %v, want %v", got, want)
	}
	if got, want := Ready(&s), JointSet(0).With(HRKFE); got != want {
		t.Errorf("Ready = %v, want %v", got, want)
	}
	if got, want := DriverFaults(&s), JointSet(0).With(HLHFE).With(HLKFE); got != want {
		t.Errorf("DriverFaults = %v, want %v", got, want)
	}
}
