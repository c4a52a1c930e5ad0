package solo12

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
)

// rig runs the emulated master board with its first-order plant in lockstep with the host side,
// every packet going through the real frame and payload codec.
type rig struct {
	t       testing.TB
	b       *board.Board
	plant   *board.FirstOrderPlant
	session uint16
	cmd     proto.Command
	sensor  proto.Sensor
	tx, rx  [proto.MaxFrameLen]byte
	// strip clears these mode bits after the calibrator filled the command: a host that
	// overwrites the index compensation.
	strip proto.Mode
}

var hostMAC = proto.MAC{2, 0, 0, 0, 0, 1}

// newRig powers up a board laid out as sc says, runs the init handshake, enables every motor and
// waits until all are ready.
func newRig(t testing.TB, sc scenario) *rig {
	t.Helper()
	start, index := sc.motors()
	plant, err := board.NewFirstOrderPlant(board.FirstOrderConfig{InitialPosition: start})
	if err != nil {
		t.Fatal(err)
	}
	b, err := board.New(board.Config{IndexAngle: index}, plant)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, b: b, plant: plant, session: 0x5017}
	in := proto.Init{Version: proto.Version, SessionID: r.session}
	if err := in.Marshal(proto.PayloadBuffer(r.tx[:], proto.InitLen)); err != nil {
		t.Fatal(err)
	}
	r.deliver(proto.InitLen)
	for tick := 0; ; tick++ {
		if kind, _ := r.receive(b.Tick()); kind == proto.KindAck {
			break
		}
		if tick > 200 {
			t.Fatalf("no ack after %d ticks (board %v)", tick, b.State())
		}
	}
	for d := range r.cmd.Drivers {
		r.cmd.Drivers[d].Mode = (proto.ModeEnableSystem | proto.EnableMotor(0) | proto.EnableMotor(1)).WithTimeout(5)
	}
	for tick := 0; Ready(&r.sensor) != AllJoints; tick++ {
		if tick > 500 {
			t.Fatalf("motors not ready after %d ticks: %v", tick, Ready(&r.sensor))
		}
		r.exchange()
	}
	return r
}

func (r *rig) deliver(n int) {
	frameLen, err := proto.PutHeader(r.tx[:], hostMAC, n)
	if err != nil {
		r.t.Fatal(err)
	}
	kind, payload, err := proto.ParsePayload(r.tx[:frameLen])
	if err != nil || (kind != proto.KindInit && kind != proto.KindCommand) {
		r.t.Fatalf("own frame: %v %v", kind, err)
	}
	r.b.HandlePayload(payload)
}

// receive frames what the board sent, parses it back and decodes a sensor packet into r.sensor.
func (r *rig) receive(out []byte) (proto.Kind, error) {
	if out == nil {
		return proto.KindUnknown, nil
	}
	n, err := proto.PutFrame(r.rx[:], proto.MAC{2, 0, 0, 0, 0, 2}, out)
	if err != nil {
		r.t.Fatal(err)
	}
	kind, payload, err := proto.ParsePayload(r.rx[:n])
	if err != nil {
		r.t.Fatalf("board frame: %v", err)
	}
	if kind == proto.KindSensor {
		if err := r.sensor.Unmarshal(payload); err != nil {
			r.t.Fatal(err)
		}
	}
	return kind, nil
}

// exchange sends r.cmd and runs one board tick.
func (r *rig) exchange() {
	r.cmd.SessionID = r.session
	r.cmd.Index++
	for d := range r.cmd.Drivers {
		r.cmd.Drivers[d].Mode &^= r.strip
	}
	sat, err := r.cmd.Marshal(proto.PayloadBuffer(r.tx[:], proto.CommandLen))
	if err != nil || sat != 0 {
		r.t.Fatalf("command: saturated %v, %v", sat, err)
	}
	r.deliver(proto.CommandLen)
	if kind, _ := r.receive(r.b.Tick()); kind != proto.KindSensor {
		r.t.Fatalf("board sent %v in %v", kind, r.b.State())
	}
}

// calibrate steps c until it is done or fails, plus extra ticks of holding, and returns the last
// phase and error.
func (r *rig) calibrate(c *Calibrator, limit time.Duration, extra int) (Phase, error) {
	r.t.Helper()
	for tick := 0; tick < int(limit/Tick); tick++ {
		phase, err := c.Step(&r.sensor, &r.cmd)
		if err != nil {
			return phase, err
		}
		if phase == PhaseDone {
			extra--
			if extra < 0 {
				return phase, nil
			}
		}
		r.exchange()
	}
	r.t.Fatalf("calibration not over after %v (phase %v)", limit, c.Phase())
	return 0, nil
}

// truth is each joint's real angle: the plant's absolute motor angle through gear and polarity.
func (r *rig) truth() (q [NumJoints]float64) {
	var motors [proto.NumMotors]board.MotorReading
	r.plant.ReadMotors(&motors)
	for j := range Joint(NumJoints) {
		q[j] = j.Polarity() * motors[j.Motor()].Position / GearRatio
	}
	return q
}

// scenario places every joint's start (joint rad, near the zero pose) and the index the offset
// refers to; the rig's motors get the matching absolute angles.
type scenario struct {
	start, offset [NumJoints]float64
}

func (s *scenario) motors() (start, index [proto.NumMotors]float64) {
	for j := range Joint(NumJoints) {
		start[j.Motor()] = j.Polarity() * s.start[j] * GearRatio
		index[j.Motor()] = j.Polarity() * s.offset[j] * GearRatio
	}
	return start, index
}

// randomScenario draws a start and an index for each joint such that method finds the index the
// offset names: ahead of the start for POS, behind it for NEG, within a quarter motor turn for
// ALT, and for AUTO anywhere in the half turn around zero with the start within 0.03 rad of zero
// (the robot laid out in its zero pose).
func randomScenario(rng *rand.Rand, method SearchMethod) scenario {
	var s scenario
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	for j := range NumJoints {
		switch method {
		case SearchAuto:
			s.start[j] = u(-0.03, 0.03)
			s.offset[j] = u(-motorTurn/2, motorTurn/2)
		case SearchPositive:
			s.start[j] = u(-0.3, 0.3)
			s.offset[j] = s.start[j] + u(0.02, 0.98)*motorTurn
		case SearchNegative:
			s.start[j] = u(-0.3, 0.3)
			s.offset[j] = s.start[j] - u(0.02, 0.98)*motorTurn
		case SearchAlternate:
			s.start[j] = u(-0.3, 0.3)
			s.offset[j] = s.start[j] + u(-0.24, 0.24)*motorTurn
		}
	}
	return s
}

// lsbJoint is the reported position's resolution in joint rad (Q24 motor turns).
const lsbJoint = 2 * math.Pi / (1 << 24) / GearRatio

func TestCalibrationFindsIndexWithEveryMethod(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, method := range []SearchMethod{SearchAuto, SearchPositive, SearchNegative, SearchAlternate} {
		for seed := range 3 {
			t.Run(fmt.Sprintf("%v/seed%d", method, seed), func(t *testing.T) {
				sc := randomScenario(rng, method)
				r := newRig(t, sc)
				cfg := DefaultCalibration()
				cfg.Offsets = sc.offset
				for j := range cfg.Methods {
					cfg.Methods[j] = method
				}
				// A target away from zero checks the final move too.
				cfg.Target[FLHFE], cfg.Target[HRKFE] = 0.4, -0.3
				c, err := NewCalibrator(cfg)
				if err != nil {
					t.Fatal(err)
				}
				phase, err := r.calibrate(c, 20*time.Second, 300)
				if err != nil || phase != PhaseDone {
					t.Fatalf("seed %d: phase %v, error %v", seed, phase, err)
				}
				var js JointState
				c.Map().ReadSensor(&r.sensor, &js)
				truth := r.truth()
				worstCal, worstTarget := 0.0, 0.0
				for j := range Joint(NumJoints) {
					// Calibrated reading against the plant's real angle: only the wire's
					// quantisation may separate them.
					d := math.Abs(js.Q[j] - truth[j])
					worstCal = max(worstCal, d)
					if d > 2*lsbJoint {
						t.Errorf("seed %d %v (%v): calibrated q %.9f, true %.9f, off by %.3g rad = %.2f motor turns",
							seed, j, c.Methods()[j], js.Q[j], truth[j], d, d/motorTurn)
					}
					worstTarget = max(worstTarget, math.Abs(truth[j]-cfg.Target[j]))
				}
				if worstTarget > 1e-3 {
					t.Errorf("seed %d: a joint ended %.3g rad from its target", seed, worstTarget)
				}
				t.Logf("seed %d: done after %v; |calibrated - true| <= %.2g rad (%.2f LSB); |true - target| <= %.2g rad",
					seed, c.Elapsed(), worstCal, worstCal/lsbJoint, worstTarget)
			})
		}
	}
}

func TestCalibrationWrongDirectionIsOneTurnOff(t *testing.T) {
	// The index repeats every motor turn, so the search direction decides which one is found: a
	// positive search for an index behind the start finds the next one ahead, and the calibrated
	// angle is off by exactly one motor turn. This is why AUTO needs the robot near its zero pose.
	var sc scenario
	for j := range NumJoints {
		sc.start[j] = 0.1
		sc.offset[j] = 0.1 - 0.25*motorTurn
	}
	r := newRig(t, sc)
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	for j := range cfg.Methods {
		cfg.Methods[j] = SearchPositive
	}
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.calibrate(c, 20*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	var js JointState
	c.Map().ReadSensor(&r.sensor, &js)
	truth := r.truth()
	for j := range NumJoints {
		if d := truth[j] - js.Q[j]; math.Abs(d-motorTurn) > 2*lsbJoint {
			t.Errorf("%v: true - calibrated = %v, want one motor turn %v", Joint(j), d, motorTurn)
		}
	}
}

func TestCalibrationAutoResolvesFromOffset(t *testing.T) {
	q := motorTurn / 4
	for _, tc := range []struct {
		offset float64
		want   SearchMethod
	}{{0, SearchAlternate}, {q * 0.99, SearchAlternate}, {-q * 0.99, SearchAlternate}, {q * 1.01, SearchPositive}, {-q * 1.01, SearchNegative}, {0.3, SearchPositive}} {
		cfg := DefaultCalibration()
		cfg.Offsets[HLKFE] = tc.offset
		cfg.Methods[FLHAA] = SearchNegative
		c, err := NewCalibrator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Methods(); got[HLKFE] != tc.want || got[FLHAA] != SearchNegative {
			t.Errorf("offset %v: methods %v, want %v for HL_KFE and NEG kept for FL_HAA", tc.offset, got, tc.want)
		}
	}
}

func TestCalibrationSweepStaysGentle(t *testing.T) {
	// Every command of a whole calibration: velocity references within SearchVelocity or
	// MoveVelocity, gains as configured, index compensation on in every mode word, and the joints
	// really move no faster than a few times the reference speed.
	rng := rand.New(rand.NewPCG(13, 14))
	sc := randomScenario(rng, SearchAuto)
	r := newRig(t, sc)
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	cfg.SearchVelocity, cfg.MoveVelocity = 0.8, 0.5
	cfg.Target = [NumJoints]float64{0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6}
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var jc JointCommand
	var js JointState
	peakRef, peakSpeed := 0.0, 0.0
	for tick := 0; ; tick++ {
		phase, err := c.Step(&r.sensor, &r.cmd)
		if err != nil {
			t.Fatal(err)
		}
		if phase == PhaseDone {
			break
		}
		if tick > 20000 {
			t.Fatal("calibration did not finish")
		}
		c.Map().ReadCommand(&r.cmd, &jc)
		for d := range r.cmd.Drivers {
			if m := r.cmd.Drivers[d].Mode; m&(proto.ModeIndexComp1|proto.ModeIndexComp2) != proto.ModeIndexComp1|proto.ModeIndexComp2 || m&proto.ModeEnableSystem == 0 {
				t.Fatalf("tick %d driver %d: mode %#04x lost compensation or the caller's bits", tick, d, uint16(m))
			}
		}
		limit := cfg.SearchVelocity
		if phase >= PhaseMove {
			limit = cfg.MoveVelocity
		}
		for j := range NumJoints {
			peakRef = max(peakRef, math.Abs(jc.Qd[j]))
			if math.Abs(jc.Qd[j]) > limit*1.001 {
				t.Fatalf("tick %d (%v) %v: velocity reference %v > %v", tick, phase, Joint(j), jc.Qd[j], limit)
			}
			wantKp, wantKd := cfg.Kp, cfg.Kd
			if phase == PhaseArm {
				wantKp, wantKd = 0, 0
			}
			if math.Abs(jc.Kp[j]-wantKp) > lsbKp || math.Abs(jc.Kd[j]-wantKd) > lsbKd || math.Abs(jc.ISat[j]-cfg.ISat) > lsbISat {
				t.Fatalf("tick %d (%v): gains %v %v %v", tick, phase, jc.Kp[j], jc.Kd[j], jc.ISat[j])
			}
		}
		r.exchange()
		c.Map().ReadSensor(&r.sensor, &js)
		for j := range NumJoints {
			peakSpeed = max(peakSpeed, math.Abs(js.Qd[j]))
		}
	}
	if peakSpeed > 3*cfg.SearchVelocity {
		t.Errorf("a joint reached %.3g rad/s", peakSpeed)
	}
	t.Logf("peak velocity reference %.3g rad/s, peak measured joint speed %.3g rad/s, done after %v", peakRef, peakSpeed, c.Elapsed())
}

func TestCalibrationWithIndicesAlreadySeen(t *testing.T) {
	// A second calibration after a first: every index is seen and compensated already, so it
	// skips the search and only moves.
	rng := rand.New(rand.NewPCG(15, 16))
	sc := randomScenario(rng, SearchAuto)
	r := newRig(t, sc)
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	first, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.calibrate(first, 20*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	r.exchange()
	cfg.Target[FRKFE] = -0.5
	second, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sawSearch := false
	for second.Phase() != PhaseDone {
		if _, err := second.Step(&r.sensor, &r.cmd); err != nil {
			t.Fatal(err)
		}
		sawSearch = sawSearch || second.Phase() == PhaseSearch && second.Elapsed() > cfg.Arm+2*Tick
		r.exchange()
	}
	if sawSearch {
		t.Error("the second calibration searched")
	}
	truth := r.truth()
	var js JointState
	second.Map().ReadSensor(&r.sensor, &js)
	for j := range NumJoints {
		if math.Abs(js.Q[j]-truth[j]) > 2*lsbJoint {
			t.Errorf("%v: q %v, true %v", Joint(j), js.Q[j], truth[j])
		}
	}
	if math.Abs(truth[FRKFE]+0.5) > 5e-3 {
		t.Errorf("FR_KFE at %v, want -0.5", truth[FRKFE])
	}
	t.Logf("second calibration done after %v", second.Elapsed())
}

func TestCalibrationTimeoutNamesMissingJoints(t *testing.T) {
	// A slow search with a short timeout: the joints whose index is close find it, the others are
	// reported.
	var sc scenario
	var want JointSet
	for j := range Joint(NumJoints) {
		sc.offset[j] = 0.01
		if j%3 == 0 || j == HRKFE {
			sc.offset[j] = 0.3 // far: AUTO searches positive but at 0.05 rad/s never gets there
			want = want.With(j)
		}
	}
	r := newRig(t, sc)
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	cfg.SearchVelocity = 0.05
	cfg.Timeout = time.Second
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	phase, err := r.calibrate(c, 5*time.Second, 0)
	var ce *CalibrationError
	if !errors.Is(err, ErrIndexTimeout) || !errors.As(err, &ce) || phase != PhaseFailed {
		t.Fatalf("phase %v, error %v", phase, err)
	}
	if ce.Joints != want || ce.Phase != PhaseSearch {
		t.Errorf("missing %v in %v, want %v in search", ce.Joints, ce.Phase, want)
	}
	if ce.After < cfg.Timeout || ce.After > cfg.Timeout+cfg.Arm+2*Tick {
		t.Errorf("reported after %v", ce.After)
	}
	if !strings.Contains(err.Error(), "HR_KFE") || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("message %q", err)
	}
	assertDamping(t, c, r)
}

// assertDamping checks that a failed calibrator keeps returning its error with the safety
// controller's command.
func assertDamping(t *testing.T, c *Calibrator, r *rig) {
	t.Helper()
	first := c.err
	for range 3 {
		phase, err := c.Step(&r.sensor, &r.cmd)
		if phase != PhaseFailed || err != first {
			t.Fatalf("after failing: phase %v, error %v", phase, err)
		}
		for m := range proto.NumMotors {
			// Zero joint references become the offsets' motor angles.
			j, _ := JointOfMotor(m)
			want := proto.MotorCommand{
				PositionRef: j.Polarity() * (0 - c.m.Offset[j]) * GearRatio,
				Kd:          SafetyDamping / gainScale,
				ISat:        MaxCurrent,
			}
			if mc := r.cmd.Motor(m); !closeMotor(*mc, want, 1e-12) {
				t.Fatalf("motor %d: %+v, want damping %+v", m, *mc, want)
			}
		}
		r.exchange()
	}
}

func TestCalibrationDriverFault(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	sc := randomScenario(rng, SearchAuto)
	r := newRig(t, sc)
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := c.Step(&r.sensor, &r.cmd); err != nil {
			t.Fatal(err)
		}
		r.exchange()
	}
	if err := r.b.SetDriverError(2, proto.ErrEncoder1); err != nil {
		t.Fatal(err)
	}
	r.exchange()
	_, err = c.Step(&r.sensor, &r.cmd)
	var ce *CalibrationError
	if !errors.Is(err, ErrDriverFault) || !errors.As(err, &ce) {
		t.Fatalf("error %v", err)
	}
	if want := JointSet(0).With(FRHFE).With(FRKFE); ce.Joints != want || ce.Codes[2] != proto.ErrEncoder1 {
		t.Errorf("joints %v codes %v, want %v with encoder 1 on driver 2", ce.Joints, ce.Codes, want)
	}
	if !strings.Contains(err.Error(), "driver 2: encoder 1") {
		t.Errorf("message %q", err)
	}
	assertDamping(t, c, r)
}

func TestCalibrationNeedsReadyMotors(t *testing.T) {
	var s proto.Sensor // nothing enabled
	c, err := NewCalibrator(DefaultCalibration())
	if err != nil {
		t.Fatal(err)
	}
	var cmd proto.Command
	_, err = c.Step(&s, &cmd)
	var ce *CalibrationError
	if !errors.Is(err, ErrMotorNotReady) || !errors.As(err, &ce) || ce.Joints != AllJoints {
		t.Fatalf("error %v", err)
	}
}

func TestCalibrationWithoutCompensationIsCaught(t *testing.T) {
	// A host that clears the index compensation bits after the calibrator set them: the position
	// does not jump at the index, which would make every calibrated angle wrong.
	rng := rand.New(rand.NewPCG(19, 20))
	sc := randomScenario(rng, SearchAuto)
	r := newRig(t, sc)
	r.strip = proto.ModeIndexComp1 | proto.ModeIndexComp2
	cfg := DefaultCalibration()
	cfg.Offsets = sc.offset
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.calibrate(c, 20*time.Second, 0)
	var ce *CalibrationError
	if !errors.Is(err, ErrNotCompensated) || !errors.As(err, &ce) || ce.Joints == 0 {
		t.Fatalf("error %v", err)
	}
	t.Log(err)
}

// syntheticSensor reports every motor enabled and ready, with the index flags of seen, at rest at
// the given motor positions.
func syntheticSensor(seen JointSet, motorPos float64) *proto.Sensor {
	var s proto.Sensor
	for d := range s.Drivers {
		s.Drivers[d].Status = proto.StatusSystemEnabled | proto.StatusMotor1Enabled | proto.StatusMotor1Ready |
			proto.StatusMotor2Enabled | proto.StatusMotor2Ready
		s.Drivers[d].Position = [2]float64{motorPos, motorPos}
	}
	for j := range Joint(NumJoints) {
		if seen.Has(j) {
			s.Drivers[j.Driver()].Status |= [2]proto.Status{proto.StatusIndex1Seen, proto.StatusIndex2Seen}[j.Port()]
		}
	}
	return &s
}

func TestCalibrationIndexLost(t *testing.T) {
	cfg := DefaultCalibration()
	c, err := NewCalibrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cmd proto.Command
	seen := JointSet(0).With(HLHAA).With(FLKFE)
	for range ticks(cfg.Arm) + 5 {
		if _, err := c.Step(syntheticSensor(seen, 0), &cmd); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Step(syntheticSensor(seen&^JointSet(0).With(HLHAA), 0), &cmd)
	var ce *CalibrationError
	if !errors.Is(err, ErrIndexLost) || !errors.As(err, &ce) || ce.Joints != JointSet(0).With(HLHAA) {
		t.Fatalf("error %v", err)
	}
}

func TestCalibrationConfigRejected(t *testing.T) {
	tests := []struct {
		name   string
		change func(*CalibrationConfig)
		want   string
	}{
		{"kp above ceiling", func(c *CalibrationConfig) { c.Kp = 6 }, "Kp"},
		{"kp zero", func(c *CalibrationConfig) { c.Kp = 0 }, "Kp"},
		{"kd NaN", func(c *CalibrationConfig) { c.Kd = math.NaN() }, "Kd"},
		{"i_sat above", func(c *CalibrationConfig) { c.ISat = 16 }, "ISat"},
		{"search velocity zero", func(c *CalibrationConfig) { c.SearchVelocity = 0 }, "SearchVelocity"},
		{"move velocity too fast", func(c *CalibrationConfig) { c.MoveVelocity = 100 }, "MoveVelocity"},
		{"range under a turn", func(c *CalibrationConfig) { c.SearchRange = 0.5 }, "SearchRange"},
		{"no timeout", func(c *CalibrationConfig) { c.Timeout = 0 }, "Timeout"},
		{"no arm", func(c *CalibrationConfig) { c.Arm = 0 }, "Arm"},
		{"negative settle", func(c *CalibrationConfig) { c.Settle = -time.Second }, "Settle"},
		{"bad method", func(c *CalibrationConfig) { c.Methods[HRHFE] = 9 }, "HR_HFE"},
		{"offset Inf", func(c *CalibrationConfig) { c.Offsets[FLHFE] = math.Inf(1) }, "FL_HFE"},
		{"target beyond limit", func(c *CalibrationConfig) { c.Target[FRHAA] = 1 }, "FR_HAA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultCalibration()
			tc.change(&cfg)
			_, err := NewCalibrator(cfg)
			if !errors.Is(err, ErrCalibrationConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrCalibrationConfig naming %s", err, tc.want)
			}
		})
	}
}

func TestCalibrationStepDoesNotAllocate(t *testing.T) {
	c, err := NewCalibrator(DefaultCalibration())
	if err != nil {
		t.Fatal(err)
	}
	s := syntheticSensor(0, 0)
	var cmd proto.Command
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := c.Step(s, &cmd); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || c.Phase() != PhaseSearch {
		t.Errorf("%v allocations per Step (phase %v)", allocs, c.Phase())
	}
}

func FuzzCalibratorStep(f *testing.F) {
	var seed [proto.SensorLen]byte
	s := syntheticSensor(AllJoints, 0.5)
	_ = s.Marshal(seed[:])
	f.Add(seed[:], uint8(0))
	f.Add(make([]byte, proto.SensorLen), uint8(3))
	f.Fuzz(func(t *testing.T, payload []byte, method uint8) {
		var s proto.Sensor
		if s.Unmarshal(payload) != nil {
			return
		}
		cfg := DefaultCalibration()
		cfg.Arm = Tick
		for j := range cfg.Methods {
			cfg.Methods[j] = SearchMethod(method % 4)
		}
		c, err := NewCalibrator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var cmd proto.Command
		buf := make([]byte, proto.CommandLen)
		for range 5 {
			if _, err := c.Step(&s, &cmd); err != nil && c.Phase() != PhaseFailed {
				t.Fatalf("error %v in phase %v", err, c.Phase())
			}
			if _, err := cmd.Marshal(buf); err != nil {
				t.Fatalf("calibrator produced an unsendable command: %v", err)
			}
		}
	})
}
