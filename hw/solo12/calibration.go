package solo12

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
)

// SearchMethod is how one joint looks for its encoder index.
type SearchMethod uint8

// Search methods. Directions are in joint space, relative to where the joint is when the search
// starts. The index repeats once per motor turn, every 2*pi/9 rad of joint travel.
const (
	// SearchAuto picks from the joint's position offset, assuming the robot starts near its zero
	// pose: after compensation the index reads q = Offset, so the index the offset was measured
	// against lies Offset away from zero. More than a quarter motor turn either way picks that
	// direction; closer than that the start pose's uncertainty could put it on either side, so
	// it alternates. This is odri_control_interface's AUTO rule.
	SearchAuto SearchMethod = iota
	SearchPositive
	SearchNegative
	// SearchAlternate sweeps both ways with an amplitude growing by a quarter motor turn per
	// swing, so it finds the index nearest the start first.
	SearchAlternate
)

func (m SearchMethod) String() string {
	switch m {
	case SearchAuto:
		return "AUTO"
	case SearchPositive:
		return "POS"
	case SearchNegative:
		return "NEG"
	case SearchAlternate:
		return "ALT"
	}
	return fmt.Sprintf("SearchMethod(%d)", uint8(m))
}

// Tick is the period of one calibration step: one master-board packet.
const Tick = time.Millisecond

// motorTurn is one motor revolution in joint radians: the spacing of the index pulses.
const motorTurn = 2 * math.Pi / GearRatio

// CalibrationConfig parameterises a Calibrator. Start from DefaultCalibration.
type CalibrationConfig struct {
	// Offsets are the robot's calibrated position offsets; the Calibrator's Map uses them.
	Offsets [NumJoints]float64
	// Methods per joint; the zero value is SearchAuto.
	Methods [NumJoints]SearchMethod
	// Target is the pose (calibrated joint rad) all joints move to once every index is found.
	Target [NumJoints]float64
	// Kp (Nm/rad) and Kd (Nm*s/rad) of the PD tracking during the whole calibration, and the motor
	// current saturation ISat (A).
	Kp, Kd, ISat float64
	// SearchVelocity and MoveVelocity are the peak joint speeds (rad/s) of the index sweep and of
	// the final move to Target.
	SearchVelocity, MoveVelocity float64
	// SearchRange is how far (joint rad) a one-way search goes before it sweeps back, and the
	// largest amplitude of an alternating one. It must exceed one motor turn.
	SearchRange float64
	// Arm is how long the index compensation is enabled with zero gains before anything moves, so
	// that an index seen before the calibration started shifts the positions while nothing
	// tracks them. Settle is the hold after every index is found, before the move.
	Arm, Settle time.Duration
	// Timeout bounds the search; joints still without an index then are reported.
	Timeout time.Duration
}

// DefaultCalibration is a gentle calibration to the zero pose: joint PD 3 Nm/rad, 0.1 Nm*s/rad,
// currents within MaxCurrent, searches at up to 1 rad/s over 1.2 motor turns, 15 s to find every
// index. Offsets and per-joint methods stay zero (AUTO).
func DefaultCalibration() CalibrationConfig {
	return CalibrationConfig{
		Kp:             3,
		Kd:             0.1,
		ISat:           MaxCurrent,
		SearchVelocity: 1,
		MoveVelocity:   1,
		SearchRange:    1.2 * motorTurn,
		Arm:            20 * time.Millisecond,
		Settle:         100 * time.Millisecond,
		Timeout:        15 * time.Second,
	}
}

// ErrCalibrationConfig marks a CalibrationConfig that NewCalibrator refuses.
var ErrCalibrationConfig = errors.New("solo12: bad calibration config")

func (c *CalibrationConfig) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCalibrationConfig}, args...)...)
	}
	inRange := func(x, lo, hi float64) bool { return x >= lo && x <= hi } // false for NaN
	switch {
	case !inRange(c.Kp, math.SmallestNonzeroFloat64, MaxJointKp):
		return bad("Kp %v Nm/rad outside (0, %.4g]", c.Kp, MaxJointKp)
	case !inRange(c.Kd, 0, MaxJointKd):
		return bad("Kd %v Nm*s/rad outside [0, %.4g]", c.Kd, MaxJointKd)
	case !inRange(c.ISat, 0, MaxISat):
		return bad("ISat %v A outside [0, %v]", c.ISat, MaxISat)
	case !inRange(c.SearchVelocity, math.SmallestNonzeroFloat64, MaxJointVelocity):
		return bad("SearchVelocity %v rad/s outside (0, %v]", c.SearchVelocity, MaxJointVelocity)
	case !inRange(c.MoveVelocity, math.SmallestNonzeroFloat64, MaxJointVelocity):
		return bad("MoveVelocity %v rad/s outside (0, %v]", c.MoveVelocity, MaxJointVelocity)
	case !inRange(c.SearchRange, motorTurn*(1+1e-9), 2*math.Pi):
		return bad("SearchRange %v rad must exceed one motor turn (%.4g rad) and stay under 2*pi", c.SearchRange, motorTurn)
	case c.Arm < Tick || c.Settle < 0 || c.Timeout < Tick:
		return bad("Arm %v and Timeout %v must be at least one tick, Settle %v not negative", c.Arm, c.Timeout, c.Settle)
	}
	for j := range Joint(NumJoints) {
		if c.Methods[j] > SearchAlternate {
			return bad("%v: unknown search method %v", j, c.Methods[j])
		}
		if o := c.Offsets[j]; math.IsNaN(o) || math.IsInf(o, 0) {
			return bad("%v: offset %v", j, o)
		}
		if lim := j.PositionLimit(); !inRange(c.Target[j], -lim, lim) {
			return bad("%v: target %v rad outside the joint limits +-%v", j, c.Target[j], lim)
		}
	}
	return nil
}

// resolve replaces SearchAuto by the direction the offset implies.
func resolve(method SearchMethod, offset float64) SearchMethod {
	if method != SearchAuto {
		return method
	}
	switch quarter := motorTurn / 4; {
	case offset > quarter:
		return SearchPositive
	case offset < -quarter:
		return SearchNegative
	}
	return SearchAlternate
}

// Phase is where a calibration stands.
type Phase uint8

// Calibration phases in order.
const (
	// PhaseArm: index compensation enabled, zero gains, nothing moves.
	PhaseArm Phase = iota
	// PhaseSearch: joints without an index sweep; joints with one hold where they found it.
	PhaseSearch
	// PhaseSettle: every index found; all joints hold still.
	PhaseSettle
	// PhaseMove: all joints move together to the target pose.
	PhaseMove
	// PhaseDone: at the target; the commands keep holding it.
	PhaseDone
	// PhaseFailed: Step returned an error; the commands are the safety controller's damping.
	PhaseFailed
)

func (p Phase) String() string {
	switch p {
	case PhaseArm:
		return "arm"
	case PhaseSearch:
		return "search"
	case PhaseSettle:
		return "settle"
	case PhaseMove:
		return "move"
	case PhaseDone:
		return "done"
	case PhaseFailed:
		return "failed"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// Errors a calibration can end with; Step wraps them in the typed errors below.
var (
	ErrIndexTimeout   = errors.New("solo12: index search timed out")
	ErrMotorNotReady  = errors.New("solo12: motor not enabled and ready")
	ErrDriverFault    = errors.New("solo12: motor driver reports an error")
	ErrIndexLost      = errors.New("solo12: index flag cleared after it was seen (driver reset?)")
	ErrNotCompensated = errors.New("solo12: position did not jump to the index (index offset compensation not applied)")
)

// CalibrationError says which joints ended a calibration and why; errors.Is matches its Err.
type CalibrationError struct {
	Err    error    // one of the Err* sentinels above
	Joints JointSet // the joints concerned
	Phase  Phase    // the phase it happened in
	After  time.Duration
	// Codes holds each driver's error code for ErrDriverFault.
	Codes [proto.NumDrivers]proto.ErrorCode
}

func (e *CalibrationError) Error() string {
	msg := fmt.Sprintf("%v: %v (in %v after %v)", e.Err, e.Joints, e.Phase, e.After)
	if errors.Is(e.Err, ErrDriverFault) {
		for d, c := range e.Codes {
			if c != proto.ErrNone {
				msg += fmt.Sprintf("; driver %d: %v", d, c)
			}
		}
	}
	return msg
}

func (e *CalibrationError) Unwrap() error { return e.Err }

// compensationSlack is how far (motor rad) from zero a joint may read on the tick its index is
// first seen: the distance covered in one tick at the search speed, with wide margin.
const compensationSlack = 0.2

// Calibrator runs the index search of every joint, one Step per link tick, without IO. Create it
// with NewCalibrator once every motor is enabled and ready; feed it each decoded sensor packet and
// send the command it fills. It never allocates after construction, except to build the error
// that ends a failed calibration.
//
// The index offset compensation is on from the first Step, so each position jumps to the index
// the moment the index is found, whether or not a driver applies the compensation to an index
// seen before the bit was set. Set the bits (EnableIndexCompensation) already in the commands that
// enable the motors: an index crossed between enabling and calibrating is then compensated too.
type Calibrator struct {
	cfg     CalibrationConfig
	m       Map
	methods [NumJoints]SearchMethod

	phase      Phase
	tick       int // Steps taken
	phaseStart int // tick the current phase began
	err        error

	found  JointSet // joints whose index the calibration has accounted for
	origin [NumJoints]float64
	seg    [NumJoints]segment
	swing  [NumJoints]int // sweeps started, for the alternating amplitude
	hold   [NumJoints]float64

	js JointState
	jc JointCommand
}

// segment is a raised-cosine move from From to To over Ticks ticks starting at tick Start: zero
// velocity at both ends, peak velocity pi/2 times the mean.
type segment struct {
	From, To     float64
	Start, Ticks int
}

func newSegment(from, to float64, start int, peakVelocity float64) segment {
	seconds := math.Pi / 2 * math.Abs(to-from) / peakVelocity
	return segment{From: from, To: to, Start: start, Ticks: max(1, int(math.Ceil(seconds/Tick.Seconds())))}
}

// at returns position and velocity at tick, and whether the segment has ended.
func (s *segment) at(tick int) (q, qd float64, ended bool) {
	k := tick - s.Start
	if k >= s.Ticks {
		return s.To, 0, true
	}
	phase := math.Pi * float64(k) / float64(s.Ticks)
	sin, cos := math.Sincos(phase)
	half := (s.To - s.From) / 2
	return s.From + half*(1-cos), half * sin * math.Pi / (float64(s.Ticks) * Tick.Seconds()), false
}

// NewCalibrator validates cfg and returns a Calibrator about to arm.
func NewCalibrator(cfg CalibrationConfig) (*Calibrator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Calibrator{cfg: cfg, m: Map{Offset: cfg.Offsets}}
	for j := range c.methods {
		c.methods[j] = resolve(cfg.Methods[j], cfg.Offsets[j])
	}
	return c, nil
}

// Methods returns the search method of each joint with SearchAuto resolved.
func (c *Calibrator) Methods() [NumJoints]SearchMethod { return c.methods }

// Map returns the joint map with the configured offsets, which the calibrated positions use.
func (c *Calibrator) Map() *Map { return &c.m }

// Phase is the phase the last Step ended in.
func (c *Calibrator) Phase() Phase { return c.phase }

// Elapsed is the time calibrated so far.
func (c *Calibrator) Elapsed() time.Duration { return time.Duration(c.tick) * Tick }

// Step consumes one decoded sensor packet and fills cmd for the next tick: the motor blocks via
// the Map, and the index-compensation bits of every mode word (the other mode bits are the
// caller's). It returns the phase reached, PhaseDone once the target pose is reached. On an error
// the calibration is over: this and every later Step fill cmd with the safety controller's
// damping (zero references, Kp 0, Kd SafetyDamping) and return the same *CalibrationError.
func (c *Calibrator) Step(s *proto.Sensor, cmd *proto.Command) (Phase, error) {
	EnableIndexCompensation(cmd)
	if c.err == nil {
		c.err = c.advance(s)
	}
	if c.err != nil {
		c.phase = PhaseFailed
		c.jc = JointCommand{}
		for j := range c.jc.Kd {
			c.jc.Kd[j] = SafetyDamping
			c.jc.ISat[j] = MaxCurrent
		}
		c.m.WriteCommand(&c.jc, cmd)
		return c.phase, c.err
	}
	c.m.WriteCommand(&c.jc, cmd)
	c.tick++
	return c.phase, nil
}

// EnableIndexCompensation sets the index offset compensation bit of both motors of every driver:
// calibrated positions are only valid while it stays set.
func EnableIndexCompensation(cmd *proto.Command) {
	for d := range cmd.Drivers {
		cmd.Drivers[d].Mode |= proto.IndexCompensation(0) | proto.IndexCompensation(1)
	}
}

func (c *Calibrator) fail(err error, joints JointSet) *CalibrationError {
	return &CalibrationError{Err: err, Joints: joints, Phase: c.phase, After: c.Elapsed()}
}

// advance moves the state machine on by one tick and sets c.jc.
func (c *Calibrator) advance(s *proto.Sensor) error {
	if bad := DriverFaults(s); bad != 0 {
		e := c.fail(ErrDriverFault, bad)
		for d := range s.Drivers {
			e.Codes[d] = s.Drivers[d].Status.Error()
		}
		return e
	}
	if ready := Ready(s); ready != AllJoints {
		return c.fail(ErrMotorNotReady, AllJoints&^ready)
	}
	seen := IndexSeen(s)
	if lost := c.found &^ seen; lost != 0 {
		return c.fail(ErrIndexLost, lost)
	}
	c.m.ReadSensor(s, &c.js)

	switch c.phase {
	case PhaseArm:
		c.track(nil, 0, 0)
		if c.tick+1 >= ticks(c.cfg.Arm) {
			// Indices seen before the search were compensated while the gains were zero; their
			// joints just hold.
			c.found = seen
			c.origin = c.js.Q
			c.hold = c.js.Q
			c.enter(PhaseSearch)
			for j := range c.seg {
				c.seg[j] = c.nextSweep(j, c.js.Q[j])
			}
			return c.search(seen)
		}
	case PhaseSearch:
		if err := c.search(seen); err != nil {
			return err
		}
	case PhaseSettle:
		c.track(&c.hold, c.cfg.Kp, c.cfg.Kd)
		if c.tick-c.phaseStart >= ticks(c.cfg.Settle) {
			c.startMove()
			c.followMove()
		}
	case PhaseMove, PhaseDone:
		c.followMove()
	}
	return nil
}

func ticks(d time.Duration) int { return int(d / Tick) }

func (c *Calibrator) enter(p Phase) {
	c.phase = p
	c.phaseStart = c.tick
}

// search sweeps every joint that has not seen its index and holds the others.
func (c *Calibrator) search(seen JointSet) error {
	var uncompensated JointSet
	for j := range Joint(NumJoints) {
		if !c.found.Has(j) && seen.Has(j) {
			// The position this packet reports is already relative to the index: hold it.
			c.found = c.found.With(j)
			c.hold[j] = c.js.Q[j]
			if motor := (c.js.Q[j] - c.m.Offset[j]) * GearRatio; math.Abs(motor) > compensationSlack {
				uncompensated = uncompensated.With(j)
			}
		}
		if c.found.Has(j) {
			c.jc.Q[j], c.jc.Qd[j] = c.hold[j], 0
			continue
		}
		q, qd, ended := c.seg[j].at(c.tick)
		if ended {
			c.seg[j] = c.nextSweep(int(j), q)
			q, qd, _ = c.seg[j].at(c.tick)
		}
		c.jc.Q[j], c.jc.Qd[j] = q, qd
	}
	c.gains(c.cfg.Kp, c.cfg.Kd)
	if uncompensated != 0 {
		return c.fail(ErrNotCompensated, uncompensated)
	}
	if c.found == AllJoints {
		c.enter(PhaseSettle)
		return nil
	}
	if c.tick-c.phaseStart >= ticks(c.cfg.Timeout) {
		return c.fail(ErrIndexTimeout, AllJoints&^c.found)
	}
	return nil
}

// nextSweep plans joint j's next sweep from position from. One-way searches go out by
// SearchRange and come back to the origin; alternating ones swing to the other side with an
// amplitude one quarter motor turn larger each time.
func (c *Calibrator) nextSweep(j int, from float64) segment {
	n := c.swing[j]
	c.swing[j]++
	var to float64
	switch c.methods[j] {
	case SearchPositive, SearchNegative:
		sign := 1.0
		if c.methods[j] == SearchNegative {
			sign = -1
		}
		to = c.origin[j]
		if n%2 == 0 {
			to += sign * c.cfg.SearchRange
		}
	default:
		amplitude := min(float64(n+1)*motorTurn/4, c.cfg.SearchRange)
		if n%2 == 1 {
			amplitude = -amplitude
		}
		to = c.origin[j] + amplitude
	}
	return newSegment(from, to, c.tick, c.cfg.SearchVelocity)
}

// startMove plans one raised-cosine move for all joints, timed by the longest so that they all
// arrive together and none exceeds MoveVelocity.
func (c *Calibrator) startMove() {
	longest := 0.0
	for j := range NumJoints {
		longest = max(longest, math.Abs(c.cfg.Target[j]-c.js.Q[j]))
	}
	duration := newSegment(0, longest, c.tick, c.cfg.MoveVelocity).Ticks
	for j := range NumJoints {
		c.seg[j] = segment{From: c.js.Q[j], To: c.cfg.Target[j], Start: c.tick, Ticks: duration}
	}
	c.enter(PhaseMove)
}

// followMove sets the move's references for this tick; the last one is held once it ends.
func (c *Calibrator) followMove() {
	ended := false
	for j := range NumJoints {
		c.jc.Q[j], c.jc.Qd[j], ended = c.seg[j].at(c.tick)
	}
	c.gains(c.cfg.Kp, c.cfg.Kd)
	if ended && c.phase == PhaseMove {
		c.enter(PhaseDone)
	}
}

// track holds the positions in target (the current ones when nil) at gains kp, kd.
func (c *Calibrator) track(target *[NumJoints]float64, kp, kd float64) {
	if target == nil {
		target = &c.js.Q
	}
	c.jc.Q = *target
	c.jc.Qd = [NumJoints]float64{}
	c.gains(kp, kd)
}

func (c *Calibrator) gains(kp, kd float64) {
	for j := range NumJoints {
		c.jc.Tau[j], c.jc.Kp[j], c.jc.Kd[j], c.jc.ISat[j] = 0, kp, kd, c.cfg.ISat
	}
}
