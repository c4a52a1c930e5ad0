package collect

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/estimator"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// sessionID is the host session the collector opens on every emulated board.
const sessionID = 1

// driverMode enables every motor with the drivers' own 5 ms command timeout, as the runtime does,
// but without index compensation: the collector's joint map is a perfect calibration (the board
// powers on with the joints at zero), so the encoders must keep their power-on zero.
var driverMode = (proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2).WithTimeout(5)

// maxTargetRate (rad/s) is how fast a commanded joint target may move: the runtime's safety
// supervisor slews a new policy target towards it one link tick at a time, so the collector moves
// the targets the same way, at the same rate.
const maxTargetRate = core.DefaultMaxTargetRate

// maxBringUpTicks bounds the board's init, SPI autodetection, ack and rotor alignment.
const maxBringUpTicks = 2000

// ErrBringUp reports an emulated board that did not reach active control with every motor ready.
var ErrBringUp = errors.New("collect: board bring-up failed")

// env is one simulated Solo12 behind an emulated master board, driven in lockstep from one
// goroutine exactly as the runtime drives a robot: every 1 ms tick a command payload is encoded
// and handed to the board, the board ticks the physics, and the sensor payload it sends back is
// decoded, mapped to joints and fed to the runtime's estimator. Observations are built from
// those decoded quantities only, through the contract's skills.Builder.
type env struct {
	robot   *sim.Robot
	plant   *sim.BoardPlant
	board   *board.Board
	layout  *worlds.Layout
	est     *estimator.Estimator
	builder *skills.Builder
	actions skills.ActionMap
	kp, kd  float64
	ticks   int // link ticks per policy step

	jmap solo12.Map
	// target is the policy's joint target, held is what is commanded: it follows target at
	// maxTargetRate.
	target, held [solo12.NumJoints]float64
	js           solo12.JointState
	jc           solo12.JointCommand
	cmd          proto.Command
	cmdBuf       [proto.CommandLen]byte
	sensor       proto.Sensor
	heights      [skills.HeightMapPoints]float64
	inputs       skills.Inputs
}

// newEnv builds the robot in layout, powers the board on with the joints at zero (so a zero
// joint offset is the exact calibration) and brings the link up to active control.
func newEnv(layout *worlds.Layout, c *skills.Contract) (*env, error) {
	b, err := skills.NewBuilder(c.Layout, c.DefaultPose, c.EpisodeSeconds, nil)
	if err != nil {
		return nil, err
	}
	robot, err := sim.NewRobot(sim.Config{Layout: layout})
	if err != nil {
		return nil, err
	}
	e := &env{
		robot: robot, layout: layout, builder: b, actions: c.ActionMap(),
		kp: c.Kp, kd: c.Kd, ticks: c.LinkTicksPerPolicyStep(),
	}
	if e.est, err = estimator.New(estimator.DefaultConfig()); err != nil {
		robot.Close()
		return nil, err
	}
	if err := e.powerOn(); err != nil {
		robot.Close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() error { return e.robot.Close() }

func (e *env) powerOn() error {
	zero := e.robot.StartPose()
	zero.Q = [solo12.NumJoints]float64{}
	zero.Pos[2] = 1 // clear of everything: only the encoders' power-on angles matter here
	if err := e.robot.Reset(zero); err != nil {
		return err
	}
	e.plant = sim.NewBoardPlant(e.robot, slog.New(slog.DiscardHandler))
	b, err := board.New(board.Config{}, e.plant)
	if err != nil {
		return err
	}
	e.board = b
	var init [proto.InitLen]byte
	in := proto.Init{Version: proto.Version, SessionID: sessionID}
	if err := in.Marshal(init[:]); err != nil {
		return err
	}
	b.HandlePayload(init[:])
	e.cmd = proto.Command{SessionID: sessionID}
	e.holdDefault()
	for range maxBringUpTicks {
		if b.State() == board.StateSendingInitAck || b.State() == board.StateActiveControl {
			if err := e.tick(); err != nil {
				return err
			}
			if b.State() == board.StateActiveControl && solo12.Ready(&e.sensor) == solo12.AllJoints {
				return nil
			}
			continue
		}
		b.Tick()
	}
	return fmt.Errorf("%w: board in %v, ready joints %v", ErrBringUp, b.State(), solo12.Ready(&e.sensor))
}

// holdDefault commands the contract's default pose at once, as the runtime holds it before a
// skill starts.
func (e *env) holdDefault() {
	for j, v := range e.actions.DefaultPose {
		e.target[j] = float64(v)
	}
	e.held = e.target
}

// command writes the held targets, tracked with the contract's gains, into the command payload
// after moving them one tick towards the policy's targets.
func (e *env) command() {
	const step = maxTargetRate * sim.ControlPeriod
	for j := range e.jc.Q {
		e.held[j] += min(max(e.target[j]-e.held[j], -step), step)
		e.jc.Q[j] = e.held[j]
		e.jc.Kp[j], e.jc.Kd[j], e.jc.ISat[j] = e.kp, e.kd, solo12.MaxCurrent
	}
	e.jmap.WriteCommand(&e.jc, &e.cmd)
	for d := range e.cmd.Drivers {
		e.cmd.Drivers[d].Mode = driverMode
	}
}

// ErrLink reports a board that stopped sending sensor packets or a plant that failed.
var ErrLink = errors.New("collect: link or plant failure")

// tick runs one 1 ms link cycle: send the command, tick the board, decode its sensor packet and
// update the joint state and the estimator.
func (e *env) tick() error {
	e.command()
	e.cmd.Index++
	if _, err := e.cmd.Marshal(e.cmdBuf[:]); err != nil {
		return fmt.Errorf("collect: encode command: %w", err)
	}
	e.board.HandlePayload(e.cmdBuf[:])
	out := e.board.Tick()
	if err := e.plant.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrLink, err)
	}
	if len(out) != proto.SensorLen {
		return nil // an ack during bring-up
	}
	if err := e.sensor.Unmarshal(out); err != nil {
		return fmt.Errorf("%w: decode sensor packet: %w", ErrLink, err)
	}
	e.jmap.ReadSensor(&e.sensor, &e.js)
	e.est.Update(&e.sensor.IMU, &e.js, sim.ControlPeriod)
	return nil
}

// reset places the robot at pose p, restarts the estimator as the runtime does at stand-up, and
// holds the default pose for settle ticks so the first observation comes from a settled robot
// and a primed estimator.
func (e *env) reset(p sim.Pose, settle int) error {
	if err := e.robot.Reset(p); err != nil {
		return err
	}
	e.est.Reset()
	e.holdDefault()
	for range settle {
		if err := e.tick(); err != nil {
			return err
		}
	}
	return nil
}

// step applies one policy action for one policy period (the contract's link ticks per step).
func (e *env) step(a *[skills.NumJoints]float32) error {
	var q32 [skills.NumJoints]float32
	if err := e.actions.Targets(a[:], q32[:]); err != nil {
		return err
	}
	for j, v := range q32 {
		e.target[j] = float64(v)
	}
	for range e.ticks {
		if err := e.tick(); err != nil {
			return err
		}
	}
	return nil
}

// task is what the observation carries besides the robot's own sensing: the locomotion command,
// or the navigation goal (world x, y, yaw) and the episode's remaining time.
type task struct {
	command   [3]float32
	goal      [3]float64
	remaining float64
}

// observe builds the raw observation from the decoded sensor data, the estimator and (for
// navigation) the perception stream a robot would have: the mocap pose and the height map.
func (e *env) observe(t *task, prev *[skills.NumJoints]float32, dst []float32) error {
	st := e.est.State()
	in := &e.inputs
	for i := range 3 {
		in.BaseLinVel[i] = float32(st.LinVel[i])
		in.BaseAngVel[i] = float32(st.AngVel[i])
		in.ProjectedGravity[i] = float32(st.ProjectedGravity[i])
	}
	in.Command = t.command
	for j := range e.js.Q {
		in.JointPos[j] = float32(e.js.Q[j])
		in.JointVel[j] = float32(e.js.Qd[j])
	}
	in.PreviousAction = *prev
	if _, ok := e.builder.Layout().Field(skills.FieldHeightMap); ok {
		m := e.robot.Mocap()
		in.Target = skills.EncodeTarget(t.goal[0]-m.Pos[0], t.goal[1]-m.Pos[1], m.Yaw, t.goal[2])
		e.robot.HeightMap(&e.heights)
		for i, h := range e.heights {
			in.HeightMap[i] = float32(h)
		}
		in.RemainingTime = float32(t.remaining)
	}
	return e.builder.Raw(in, dst)
}
