package robotboard

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/mujoco"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// FallTilt is the base tilt (angle between the base's z axis and the vertical) beyond which
// Truth reports a fall even before the body touches the ground.
const FallTilt = math.Pi / 3

// Config describes a simulated robot behind its board. The zero value is Solo12 on flat ground.
type Config struct {
	// Scenario is the world (nil: flat ground); Seed resolves its jitter and seeds the noise.
	Scenario *worlds.Scenario
	Seed     uint64
	// Substeps of physics and motor PD per 1 ms tick (0: sim.DefaultSubsteps; 10 runs the
	// cards' PD loop at their 10 kHz).
	Substeps int
	Noise    sim.Noise
	Board    board.Config
	Logger   *slog.Logger // nil: slog.Default()
	// HostDelay is how long the robot runs before New returns, with no host and so with its
	// motors off: it sinks onto the ground, as a robot does that powers on before its runtime
	// connects (a real Solo12, or a simulator started before its runtime). 0: a host connects at
	// power-on, standing, as collection and evaluation assume.
	HostDelay time.Duration
}

// Robot is a simulated Solo12 behind an emulated master board. It is not safe for concurrent
// use: while a Server runs it, reach it only through Server.Do.
type Robot struct {
	robot    *sim.Robot
	plant    *plant
	board    *board.Board
	layout   *worlds.Layout
	offsets  [solo12.NumJoints]float64
	baseGeom int
	seq      uint64
	heights  [skills.HeightMapPoints]float64
	served   bool // a Server owns the robot
}

// plant is the robot as the board's plant, with a hook run after every tick's physics: where a
// Server takes its perception samples, on the tick's own thread.
type plant struct {
	*sim.BoardPlant
	afterStep func()
}

func (p *plant) Step(drive *[sim.NumMotors]board.MotorDrive) {
	p.BoardPlant.Step(drive)
	if p.afterStep != nil {
		p.afterStep()
	}
}

// New builds the world, places the robot at its start and powers the board on; with
// cfg.HostDelay it leaves the robot unattended that long.
func New(cfg Config) (*Robot, error) {
	if cfg.HostDelay < 0 {
		return nil, fmt.Errorf("robotboard: host delay %v: want 0 or more", cfg.HostDelay)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var layout *worlds.Layout
	if cfg.Scenario != nil {
		layout = cfg.Scenario.Layout(cfg.Seed)
	}
	r, err := sim.NewRobot(sim.Config{Layout: layout, Substeps: cfg.Substeps, Seed: cfg.Seed, Noise: cfg.Noise})
	if err != nil {
		return nil, fmt.Errorf("robotboard: %w", err)
	}
	baseGeom, err := r.World().ID(mujoco.ObjGeom, "base")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("robotboard: the model's base geom: %w", err)
	}
	p := &plant{BoardPlant: sim.NewBoardPlant(r, log)}
	b, err := board.New(cfg.Board, p)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("robotboard: %w", err)
	}
	rb := &Robot{robot: r, plant: p, board: b, layout: layout, baseGeom: baseGeom}
	var qd [solo12.NumJoints]float64
	r.Joints(&rb.offsets, &qd) // the encoders count from power-on, before any wait
	// One Step is one board tick (sim.ControlPeriod).
	for range int(math.Round(cfg.HostDelay.Seconds() / sim.ControlPeriod)) {
		rb.Step(nil)
	}
	if err := rb.Err(); err != nil {
		r.Close()
		return nil, fmt.Errorf("robotboard: waiting %v for a host: %w", cfg.HostDelay, err)
	}
	return rb, nil
}

// LoadScenario reads a world: the file at nameOrPath if there is one, else the built-in world of
// that name (worlds.BuiltinNames). A missing file named as one (a directory in it, or a .yaml
// or .yml ending) is reported as a missing file, not as an unknown built-in world.
func LoadScenario(nameOrPath string) (*worlds.Scenario, error) {
	data, err := os.ReadFile(nameOrPath)
	switch {
	case err == nil:
		s, err := worlds.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("robotboard: world file %s: %w", nameOrPath, err)
		}
		return s, nil
	case errors.Is(err, os.ErrNotExist) && !looksLikeFile(nameOrPath):
		return worlds.Builtin(nameOrPath)
	}
	return nil, fmt.Errorf("robotboard: world file: %w", err)
}

// looksLikeFile says whether a world's name can only be a file's.
func looksLikeFile(name string) bool {
	ext := filepath.Ext(name)
	return strings.ContainsRune(name, filepath.Separator) || ext == ".yaml" || ext == ".yml"
}

// Close frees the simulation.
func (r *Robot) Close() error { return r.robot.Close() }

// Board is the emulated master board; the runtime's lockstep driver may drive it directly.
func (r *Robot) Board() *board.Board { return r.board }

// Sim is the simulated robot, for tools that need more than Truth.
func (r *Robot) Sim() *sim.Robot { return r.robot }

// Layout is the world the robot stands in (nil on flat ground without a scenario).
func (r *Robot) Layout() *worlds.Layout { return r.layout }

// JointOffsets are the joint angles at power-on, where every encoder counts from: the offsets of
// a host's solo12.Map that reads true joint angles from this board.
func (r *Robot) JointOffsets() [solo12.NumJoints]float64 { return r.offsets }

// Err is the error that froze the physics (a MuJoCo divergence), or nil.
func (r *Robot) Err() error { return r.plant.Err() }

// Step is one lockstep tick: the board handles payload (the bytes after a frame's header; nil
// when the host sent nothing this tick), then runs 1 ms. It returns what the board sends this
// tick (an ack, a sensor packet or nil), valid until the next Step. A board configured for
// another protocol version answers an init at once (Board().HandlePayload's reply), which Step
// drops: drive the Board directly to see it. Step allocates nothing.
func (r *Robot) Step(payload []byte) []byte {
	if payload != nil {
		r.board.HandlePayload(payload)
	}
	return r.board.Tick()
}

// Perceive fills d with what the robot's perception stack reports now: the next sequence number,
// the simulated time, the motion-capture pose and the height map. It is a perception.Fill and
// allocates nothing.
func (r *Robot) Perceive(d *perception.Datagram) {
	r.seq++
	m := r.robot.Mocap()
	r.robot.HeightMap(&r.heights)
	d.Seq = r.seq
	d.Stamp = r.simTime()
	d.Position, d.Yaw = m.Pos, m.Yaw
	for i, h := range r.heights {
		d.Heights[i] = float32(h)
	}
}

// Truth is simulator ground truth about the base, for evaluation; never the runtime's input.
type Truth struct {
	Time   time.Duration // simulated time since power-on
	Pos    [3]float64    // world frame, m; Pos[2] is the height above the ground plane
	LinVel [3]float64    // world frame, m/s
	Yaw    float64       // heading about world z, rad
	Tilt   float64       // angle between the base's z axis and the vertical, rad
	// Fell: the body touches the terrain, or Tilt is beyond FallTilt.
	Fell bool
}

// Truth reads the ground truth of the last tick. It allocates nothing.
func (r *Robot) Truth() Truth {
	b := r.robot.Base()
	w, x, y, z := b.Quat[0], b.Quat[1], b.Quat[2], b.Quat[3]
	n := w*w + x*x + y*y + z*z
	up := 1 - 2*(x*x+y*y)/n // base z axis . world z
	t := Truth{
		Time:   r.simTime(),
		Pos:    b.Pos,
		LinVel: b.LinVel,
		Yaw:    math.Atan2(2*(w*z+x*y)/n, 1-2*(y*y+z*z)/n),
		Tilt:   math.Acos(max(-1, min(1, up))),
	}
	t.Fell = t.Tilt > FallTilt || r.bodyTouches()
	return t
}

// simTime is the physics clock. MuJoCo sums float timesteps, which drifts by parts in 1e12; the
// clock only ever advances by whole substeps (at least 10 us), so rounding to microseconds gives
// exact milliseconds per tick.
func (r *Robot) simTime() time.Duration {
	return time.Duration(math.Round(r.robot.Time()*1e6)) * time.Microsecond
}

// bodyTouches reports a contact of the base's own geom: only the terrain can collide with it.
func (r *Robot) bodyTouches() bool {
	w := r.robot.World()
	for i := range w.NumContacts() {
		c, err := w.Contact(i)
		if err != nil {
			return false
		}
		if c.Geom1 == r.baseGeom || c.Geom2 == r.baseGeom {
			return true
		}
	}
	return false
}
