package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim/mujoco"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// NumMotors is the number of motors, indexed as the master board numbers them (driver m/2,
// port m%2); solo12.Joint.Motor says which joint each drives.
const NumMotors = proto.NumMotors

// ControlPeriod is what one Robot.Step advances: the master board's 1 kHz tick.
const ControlPeriod = physicsPeriod

// DefaultSubsteps is the number of motor-PD + physics substeps per control period when Config
// leaves it at 0. Measured by TestSubstepComparison (0.3 rad joint sines on the rig): one
// substep (PD at 1 kHz on 1 ms physics) tracks like ten (PD at the cards' 10 kHz on 0.1 ms
// physics) within 3% at Kp 5, Kd 0.15 and 1 Hz, 5% at 4 Hz, and 12% at the link's Kd ceiling
// (0.62 Nm s/rad) at 4 Hz; standing is equally still. One substep is ten times cheaper, so it
// is the default for data collection; a real-time simulated board can afford Substeps = 10.
const DefaultSubsteps = 1

// ErrNonFiniteDrive is returned by Step when a motor command holds NaN or Inf; nothing is applied.
var ErrNonFiniteDrive = errors.New("sim: non-finite motor command")

// Noise configures seeded sensor noise: white Gaussian with the given standard deviations,
// plus constant biases. The zero value is a perfect sensor.
type Noise struct {
	EncoderStd  float64    // rad, motor side
	VelocityStd float64    // rad/s, motor side
	CurrentStd  float64    // A
	AccelStd    float64    // m/s^2
	AccelBias   [3]float64 // m/s^2, IMU frame
	GyroStd     float64    // rad/s
	GyroBias    [3]float64 // rad/s
	AttitudeStd float64    // rad, on roll, pitch and yaw
	MocapPosStd float64    // m
	MocapYawStd float64    // rad
}

// Config describes a simulated robot.
type Config struct {
	// Layout is the world around the robot; nil is flat ground.
	Layout *worlds.Layout
	// FixedBase hangs the robot on a test rig (base welded at 0.5 m).
	FixedBase bool
	// Substeps per 1 ms control period, each one motor-PD update and one physics step of
	// 1 ms/Substeps. 0 means DefaultSubsteps.
	Substeps int
	// Seed drives the sensor noise; equal seeds give bit-identical runs.
	Seed  uint64
	Noise Noise
	// CurrentLimit is the cards' own current limit (A), applied on top of i_sat (and alone when
	// i_sat is 0).
	// 0 means proto.MaxISat, the largest i_sat the link can carry.
	CurrentLimit float64
}

// Pose is a rigid base pose plus joint angles, used to place the robot.
type Pose struct {
	Pos [3]float64                // base position, world frame
	RPY [3]float64                // base roll, pitch, yaw (Z-Y-X Euler)
	Q   [solo12.NumJoints]float64 // joint angles, project joint order
}

// BaseState is simulator ground truth about the base (never shown to the runtime).
type BaseState struct {
	Pos    [3]float64 // world frame, m
	Quat   [4]float64 // w, x, y, z
	LinVel [3]float64 // world frame, m/s
	AngVel [3]float64 // base frame, rad/s
}

// Mocap is one sample of the motion-capture stream: base position and heading in the world.
type Mocap struct {
	Pos [3]float64
	Yaw float64
}

// Robot is a simulated Solo12 in one MuJoCo world. Not safe for concurrent use.
type Robot struct {
	world    *mujoco.World
	cfg      Config
	substeps int
	limit    float64
	rng      *rand.Rand

	qAdr, dAdr    [solo12.NumJoints]int // joint addresses in qpos and qvel
	motor         [solo12.NumJoints]int // motor number of each joint
	polarity      [solo12.NumJoints]float64
	baseQ, baseD  int // free-joint addresses, -1 on a fixed base
	accAdr        int
	footGeom      [solo12.NumLegs]int
	rayTop        float64
	rayFilter     mujoco.RayFilter
	terrainGroups [6]bool
	yaw0          float64
	current       [NumMotors]float64
	motors        [NumMotors]board.MotorReading
	imu           proto.IMU
	mocap         Mocap
	qpos, qvel    []float64
	qfrc, sensors []float64
	gravity       float64
}

// NewRobot builds the model for cfg and places the robot standing at the layout's start.
func NewRobot(cfg Config) (*Robot, error) {
	substeps := cfg.Substeps
	if substeps == 0 {
		substeps = DefaultSubsteps
	}
	if substeps < 1 || substeps > 100 {
		return nil, fmt.Errorf("sim: %d substeps per control period: want 1..100", substeps)
	}
	limit := cfg.CurrentLimit
	if limit == 0 {
		limit = proto.MaxISat
	}
	if !(limit > 0) || math.IsInf(limit, 0) {
		return nil, fmt.Errorf("sim: current limit %g A: want a positive finite value", limit)
	}
	xml, err := ModelXML(cfg.Layout, ModelOptions{FixedBase: cfg.FixedBase, Timestep: ControlPeriod / float64(substeps)})
	if err != nil {
		return nil, err
	}
	w, err := mujoco.LoadXML(xml)
	if err != nil {
		return nil, fmt.Errorf("sim: load Solo12 model: %w", err)
	}
	r := &Robot{
		world: w, cfg: cfg, substeps: substeps, limit: limit,
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x50_10_12)),
		qpos: w.QPos(), qvel: w.QVel(), qfrc: w.QfrcApplied(), sensors: w.SensorData(),
		gravity: -w.Gravity()[2],
	}
	if err := r.bind(); err != nil {
		w.Close()
		return nil, err
	}
	if err := r.Reset(r.StartPose()); err != nil {
		w.Close()
		return nil, err
	}
	return r, nil
}

func (r *Robot) bind() error {
	w := r.world
	for j := range solo12.NumJoints {
		joint := solo12.Joint(j)
		id, err := w.ID(mujoco.ObjJoint, joint.String())
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if r.qAdr[j], r.dAdr[j], err = w.JointAddr(id); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		r.motor[j] = joint.Motor()
		r.polarity[j] = joint.Polarity()
	}
	r.baseQ, r.baseD = -1, -1
	if !r.cfg.FixedBase {
		id, err := w.ID(mujoco.ObjJoint, "root")
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if r.baseQ, r.baseD, err = w.JointAddr(id); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	acc, err := w.ID(mujoco.ObjSensor, "imu_acc")
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if r.accAdr, _, err = w.SensorAddr(acc); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for leg := range solo12.NumLegs {
		if r.footGeom[leg], err = w.ID(mujoco.ObjGeom, solo12.Leg(leg).String()+"_FOOT"); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	top := 0.0
	if l := r.cfg.Layout; l != nil {
		for _, b := range l.Boxes {
			top = max(top, b.Center[2]+b.Half[2])
		}
	}
	r.rayTop = top + 1
	r.terrainGroups[terrainGeomGroup] = true
	r.rayFilter = mujoco.RayFilter{Groups: &r.terrainGroups, ExcludeBody: -1}
	return nil
}

// Close frees the MuJoCo world. The Robot must not be used afterwards.
func (r *Robot) Close() error { return r.world.Close() }

// World exposes the underlying MuJoCo world for tools and tests (ground truth, contacts).
func (r *Robot) World() *mujoco.World { return r.world }

// Substeps is the number of PD + physics substeps per control period.
func (r *Robot) Substeps() int { return r.substeps }

// StandingHeight is the base height of the standing pose on flat ground (m).
func StandingHeight() float64 { return standingHeight }

// StandingPose returns skills.StandingPose as float64 joint angles.
func StandingPose() (q [solo12.NumJoints]float64) {
	for j, v := range skills.StandingPose {
		q[j] = float64(v)
	}
	return q
}

// StartPose is the layout's start, standing at StandingHeight in the standing pose.
func (r *Robot) StartPose() Pose {
	p := Pose{Pos: [3]float64{0, 0, standingHeight}, Q: StandingPose()}
	if l := r.cfg.Layout; l != nil {
		p.Pos[0], p.Pos[1], p.RPY[2] = l.Start.X, l.Start.Y, l.Start.Yaw
	}
	return p
}

// Reset puts the robot at rest in pose p (on a fixed base only the joints are placed), zeroes
// the simulation clock and the motor currents, and restarts the IMU so its yaw reads 0. The
// noise generator is not reseeded: successive episodes see fresh noise.
func (r *Robot) Reset(p Pose) error {
	for _, vs := range [][]float64{p.Pos[:], p.RPY[:], p.Q[:]} {
		for _, v := range vs {
			if !finite(v) {
				return fmt.Errorf("sim: reset pose has a non-finite value: %+v", p)
			}
		}
	}
	if err := r.world.Reset(); err != nil {
		return fmt.Errorf("sim: reset: %w", err)
	}
	if r.baseQ >= 0 {
		copy(r.qpos[r.baseQ:], p.Pos[:])
		q := quatFromRPY(p.RPY)
		copy(r.qpos[r.baseQ+3:], q[:])
	}
	for j, v := range p.Q {
		r.qpos[r.qAdr[j]] = v
	}
	r.current = [NumMotors]float64{}
	r.yaw0 = p.RPY[2]
	if r.cfg.FixedBase {
		r.yaw0 = 0
	}
	if err := r.world.Forward(); err != nil {
		return fmt.Errorf("sim: reset: %w", err)
	}
	r.sample()
	return nil
}

// Step runs one 1 ms control period: at every substep each enabled motor's card computes its
// current from the drive (indexed by motor number) and the rotor's absolute angle
// theta = p*N*q with board.PDCurrent, the cards' own limit Config.CurrentLimit clips it, the
// current becomes joint torque tau = p*N*kt*I, and physics advances. A disabled motor carries no
// current. Sensors are sampled at the end. It allocates nothing.
func (r *Robot) Step(drive *[NumMotors]board.MotorDrive) error {
	for m := range drive {
		d := &drive[m]
		if !finite(d.PositionRef) || !finite(d.VelocityRef) || !finite(d.CurrentRef) ||
			!finite(d.Kp) || !finite(d.Kd) || !finite(d.ISat) {
			return fmt.Errorf("%w: motor %d: %+v", ErrNonFiniteDrive, m, d.MotorCommand)
		}
	}
	const n, kt = solo12.GearRatio, solo12.MotorConstant
	for range r.substeps {
		for j := range solo12.NumJoints {
			m, p := r.motor[j], r.polarity[j]
			d := &drive[m]
			var current float64
			if d.Enabled {
				current = board.PDCurrent(&d.MotorCommand, p*n*r.qpos[r.qAdr[j]], p*n*r.qvel[r.dAdr[j]])
				current = min(max(current, -r.limit), r.limit)
			}
			r.current[m] = current
			r.qfrc[r.dAdr[j]] = p * n * kt * current
		}
		if err := r.world.Step(1); err != nil {
			return fmt.Errorf("sim: step at t=%.4f s: %w", r.world.Time(), err)
		}
	}
	r.sample()
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// sample reads every per-period sensor once, drawing its noise, so a period's readings do not
// depend on how often they are read.
func (r *Robot) sample() {
	nz := &r.cfg.Noise
	const n = solo12.GearRatio
	for j := range solo12.NumJoints {
		m, p := r.motor[j], r.polarity[j]
		r.motors[m] = board.MotorReading{
			Position: p*n*r.qpos[r.qAdr[j]] + r.gauss(nz.EncoderStd),
			Velocity: p*n*r.qvel[r.dAdr[j]] + r.gauss(nz.VelocityStd),
			Current:  r.current[m] + r.gauss(nz.CurrentStd),
		}
	}
	base := r.Base()
	rot := rotFromQuat(base.Quat)
	roll, pitch, yaw := rpyFromRot(&rot)
	imu := &r.imu
	// Gravity's reaction in the IMU frame, R^T (0, 0, g): what an accelerometer at rest reads.
	up := [3]float64{rot[6] * r.gravity, rot[7] * r.gravity, rot[8] * r.gravity}
	for k := range 3 {
		imu.Accelerometer[k] = r.sensors[r.accAdr+k] + nz.AccelBias[k] + r.gauss(nz.AccelStd)
		imu.Gyroscope[k] = base.AngVel[k] + nz.GyroBias[k] + r.gauss(nz.GyroStd)
		imu.LinearAcc[k] = imu.Accelerometer[k] - up[k]
	}
	imu.Attitude = [3]float64{
		roll + r.gauss(nz.AttitudeStd),
		pitch + r.gauss(nz.AttitudeStd),
		wrapAngle(yaw - r.yaw0 + r.gauss(nz.AttitudeStd)),
	}
	r.mocap = Mocap{
		Pos: [3]float64{base.Pos[0] + r.gauss(nz.MocapPosStd), base.Pos[1] + r.gauss(nz.MocapPosStd), base.Pos[2] + r.gauss(nz.MocapPosStd)},
		Yaw: wrapAngle(yaw + r.gauss(nz.MocapYawStd)),
	}
}

func (r *Robot) gauss(std float64) float64 {
	if std == 0 {
		return 0
	}
	return std * r.rng.NormFloat64()
}

// ReadMotors copies the motor readings of the last period, indexed by motor number: absolute
// rotor angle p*N*q (the board applies its encoder offsets), velocity and the current the card
// drove in the last substep.
func (r *Robot) ReadMotors(out *[NumMotors]board.MotorReading) { *out = r.motors }

// ReadIMU copies the master board IMU reading of the last period (IMU frame = base frame axes;
// accelerometer includes gravity and reads +1 g on z at rest; yaw is zeroed at Reset).
func (r *Robot) ReadIMU(out *proto.IMU) { *out = r.imu }

// Mocap returns the motion-capture sample of the last period.
func (r *Robot) Mocap() Mocap { return r.mocap }

// Time is the simulated time since Reset, s.
func (r *Robot) Time() float64 { return r.world.Time() }

// Base returns the true base state.
func (r *Robot) Base() BaseState {
	if r.baseQ < 0 {
		return BaseState{Pos: [3]float64{0, 0, fixedBaseHeight}, Quat: [4]float64{1, 0, 0, 0}}
	}
	var s BaseState
	copy(s.Pos[:], r.qpos[r.baseQ:])
	copy(s.Quat[:], r.qpos[r.baseQ+3:])
	// MuJoCo's free joint: linear velocity in the world frame, angular in the body frame.
	copy(s.LinVel[:], r.qvel[r.baseD:])
	copy(s.AngVel[:], r.qvel[r.baseD+3:])
	return s
}

// Joints copies the true joint angles and velocities in project joint order.
func (r *Robot) Joints(q, qd *[solo12.NumJoints]float64) {
	for j := range solo12.NumJoints {
		q[j], qd[j] = r.qpos[r.qAdr[j]], r.qvel[r.dAdr[j]]
	}
}

// FootContacts reports which feet (FL, FR, HL, HR) touch anything.
func (r *Robot) FootContacts() (touch [solo12.NumLegs]bool) {
	w := r.world
	for i := range w.NumContacts() {
		c, err := w.Contact(i)
		if err != nil {
			break
		}
		for leg, g := range r.footGeom {
			if c.Geom1 == g || c.Geom2 == g {
				touch[leg] = true
			}
		}
	}
	return touch
}

// HeightMap fills out with the terrain height minus the base height at the skills height-map
// grid (skills.HeightMapPoint: 11 x 11, 0.1 m spacing, +-0.5 m, yaw-aligned base frame,
// row-major, x forward), by casting rays straight down at the terrain only (never the robot).
// Points beyond all terrain read as ground level. Allocates nothing.
func (r *Robot) HeightMap(out *[skills.HeightMapPoints]float64) {
	base := r.Base()
	rot := rotFromQuat(base.Quat)
	_, _, yaw := rpyFromRot(&rot)
	c, s := math.Cos(yaw), math.Sin(yaw)
	down := [3]float64{0, 0, -1}
	for i := range out {
		x, y := skills.HeightMapPoint(i)
		from := [3]float64{base.Pos[0] + c*x - s*y, base.Pos[1] + s*x + c*y, r.rayTop}
		ground := 0.0
		if d, _ := r.world.Ray(from, down, r.rayFilter); d >= 0 {
			ground = r.rayTop - d
		}
		out[i] = ground - base.Pos[2]
	}
}
