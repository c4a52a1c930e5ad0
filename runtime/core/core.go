package core

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/estimator"
	"github.com/dualforce/dualforce/skills"
)

// Phase is where the controller stands.
type Phase uint8

const (
	PhaseWaitReady Phase = iota // motors enabled, waiting for every driver's ready bit
	PhaseCalibrate              // index search
	PhaseStandUp                // smooth move to the default pose
	PhaseHold                   // holding the default pose
	PhaseRun                    // the skill's policy drives the joints
	PhaseDamp                   // damping controller (a latched fault, or the operator asked)
	PhaseStop                   // damping before the motors go off
	PhaseOff                    // motors disabled
)

var phaseNames = [...]string{"wait_ready", "calibrate", "stand_up", "hold", "run", "damp", "stop", "off"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "unknown"
}

// Mode is the operator-facing name of a phase.
func (p Phase) Mode() corebus.Mode {
	switch p {
	case PhaseStandUp, PhaseHold:
		return corebus.ModeStand
	case PhaseRun:
		return corebus.ModeRun
	case PhaseStop, PhaseOff:
		return corebus.ModeStop
	}
	return corebus.ModeDamp
}

// Perception is what the robot's perception stack delivers: the height map around the base and
// the base pose from motion capture.
type Perception struct {
	Valid     bool
	HeightMap [skills.HeightMapPoints]float32 // terrain height relative to the base, skills' grid
	Position  [3]float64                      // world, m
	Yaw       float64                         // rad about world z
}

// Input is one link tick's worth of inputs.
type Input struct {
	Now        time.Duration    // monotonic time of this tick, from the driver
	Sensor     *proto.Sensor    // the newest decoded sensor packet (nil before the first)
	Fresh      bool             // Sensor arrived since the previous Step
	Perception *Perception      // nil when the robot has none
	Slider     *slider.Snapshot // nil when no slider box is attached
	Overrun    bool             // the driver ran this tick past its deadline
}

// Output is what a Step produces. Slices are valid until the next Step.
type Output struct {
	// Command is the packet to send; the host session stamps the session id and command index.
	Command    proto.Command
	Events     []corebus.Event
	PolicyTick bool      // the policy ran this tick
	Obs        []float32 // the normalised observation, on policy ticks
	Action     []float32 // the policy's action, on policy ticks
	// Applied are the operator commands taken from the queue at this tick, for the flight
	// recorder (replay offers them again before the same tick).
	Applied []corebus.Command
}

const (
	maxEvents    = 16
	commandQueue = 64
)

// Core is the controller. Step it from one goroutine; Submit, OfferBank, State and Catalogue
// may be called from others.
type Core struct {
	cfg    Config
	limits Limits
	kp, kd float64

	bank      *Loaded
	live      atomic.Pointer[Loaded] // bank, for goroutines that offer commands
	encoding  sync.Mutex             // one FRE encode at a time: the encoder is not concurrent
	catalogue atomic.Pointer[corebus.Catalogue]
	offered   atomic.Pointer[offer]
	commands  *corebus.Ring[corebus.Command]
	outbox    *corebus.Ring[corebus.Event]
	state     *corebus.Latest[corebus.Snapshot] // read by the MQTT adapter
	monitor   *corebus.Latest[corebus.Snapshot] // read by one in-process observer (status log, tests)
	snap      corebus.Snapshot
	decim     uint64
	est       *estimator.Estimator
	calib     *solo12.Calibrator
	jmap      solo12.Map
	js        solo12.JointState
	jc        solo12.JointCommand
	switcher  Switcher
	inputs    skills.Inputs
	reasons   reasonTable
	events    [maxEvents]corebus.Event
	nEvents   int
	applied   [commandQueue]corebus.Command
	nApplied  int
	dropped   atomic.Uint64
	phase     Phase
	fault     string
	// shared mirrors phase and fault for other goroutines: phase in the low byte, the fault's
	// index in FaultCodes plus one above it (0: none). Written only when either changes.
	shared    atomic.Uint32
	estop     bool
	ticks     uint64
	lastFresh time.Duration
	sawSensor bool
	overruns  int
	since     time.Duration // when the current phase started
	// clockFrom is when the running skill's episode started (the remaining-time input): the
	// run's start, or where a restart switch started the skill afresh.
	clockFrom time.Duration
	// restartAt is when a restart switch (SwitchConfig.Restart) that holds the default pose
	// starts the new skill; 0 when none is pending.
	restartAt time.Duration
	// settling is the hold after the first stand-up that auto-run ends after cfg.Settle; any
	// phase change or operator mode command ends it without running.
	settling bool

	standFrom [12]float64
	// standLower and standUpper are the joint limits during stand-up: a robot that collapsed
	// with its motors off may start beyond a limit, and may move back inside but not further out.
	standLower, standUpper [12]float64
	targets                [12]float64 // the policy's targets, held between policy ticks
	held                   [12]float64 // what is commanded, slewed towards targets
	// A switch while running blends the targets from blendFrom (what the old skill aimed at)
	// to the new skill's over cfg.Blend from blendStart; mixed is the blend of this tick.
	blending   bool
	blendStart time.Duration
	blendFrom  [12]float64
	mixed      [12]float64
	report     corebus.SwitchReport // the explanation of the switch being decided
	recalled   corebus.RecallResult // the outcome of the recall command being applied
	action     [12]float32
	prevAction [12]float32
	slot       int
	active     corebus.ActiveSkill
	velocity   [3]float64
	goal       [3]float64
}

type offer struct {
	bank *Loaded
	path string
	err  error
	ref  corebus.CommandRef
}

// New builds a core around a loaded bank.
func New(cfg Config, bank *Loaded) (*Core, error) {
	cfg.Bank = bank.Bank
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	est, err := estimator.New(estimator.DefaultConfig())
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg: cfg, limits: cfg.Limits, bank: bank, est: est,
		commands: corebus.NewRing[corebus.Command](commandQueue),
		outbox:   corebus.NewRing[corebus.Event](256),
		state:    corebus.NewLatest[corebus.Snapshot](),
		monitor:  corebus.NewLatest[corebus.Snapshot](),
		decim:    uint64(bank.Bank.Contract.LinkHz / bank.Bank.Contract.PolicyHz),
		velocity: cfg.Velocity, goal: cfg.Goal,
		reasons:  newReasonTable(),
		switcher: newSwitcher(cfg.Switching),
	}
	c.setGains(bank)
	c.catalogue.Store(bank.catalogue)
	c.live.Store(bank)
	if cmd := bank.Bank.Contract.Command; cmd != nil && cfg.Velocity == [3]float64{} {
		c.velocity = [3]float64{float64(cmd[0]), float64(cmd[1]), float64(cmd[2])}
	}
	if cfg.Calibration == CalibrateIndex {
		if c.calib, err = solo12.NewCalibrator(cfg.Index); err != nil {
			return nil, err
		}
	}
	if err := c.selectLatent(cfg.Skill); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Core) setGains(b *Loaded) {
	c.kp, c.kd = b.Bank.Contract.Kp, b.Bank.Contract.Kd
	if c.cfg.Kp > 0 {
		c.kp = c.cfg.Kp
	}
	if c.cfg.Kd > 0 {
		c.kd = c.cfg.Kd
	}
}

// OfferCommand queues an operator command for the next policy tick; false when the queue is
// full. Safe from any goroutine, never from the one that steps the core: a recall whose reward
// lies outside the bank's features is FRE-encoded here, in the caller's time (milliseconds for
// a real encoder), so that the control loop never waits for it.
func (c *Core) OfferCommand(cmd corebus.Command) bool {
	if cmd.Kind == corebus.KindRecall && cmd.Recall.Latent == nil {
		c.encodeRecall(&cmd.Recall)
	}
	return c.commands.Offer(cmd)
}

// PollEvent takes the oldest event not yet taken, for the one consumer of events (the MQTT
// adapter). Events also appear in each Step's Output for the flight recorder.
func (c *Core) PollEvent(dst *corebus.Event) bool { return c.outbox.Poll(dst) }

// EventsDropped counts events lost because the outbox or a tick's event buffer was full.
func (c *Core) EventsDropped() uint64 { return c.outbox.Dropped() + c.dropped.Load() }

// LoadState copies the snapshot of the latest policy tick; false before the first. It has one
// reader, the MQTT adapter; in-process observers use LoadMonitor.
func (c *Core) LoadState(dst *corebus.Snapshot) bool { return c.state.Load(dst) }

// LoadMonitor is LoadState for one in-process observer (the status log, a test), so that it
// never competes with the adapter for the same buffer.
func (c *Core) LoadMonitor(dst *corebus.Snapshot) bool { return c.monitor.Load(dst) }

// OfferBank hands over the result of a bank load done off the control thread: a loaded bank, or
// the error that refused the file at path. A bank is swapped in at the next policy tick at which
// no skill runs; either way the answer to ref is an EventBankLoad, and on error the running bank
// stays.
func (c *Core) OfferBank(b *Loaded, path string, err error, ref corebus.CommandRef) {
	c.offered.Store(&offer{bank: b, path: path, err: err, ref: ref})
}

// Catalogue lists the running bank's skills. Safe from any goroutine.
func (c *Core) Catalogue() *corebus.Catalogue { return c.catalogue.Load() }

// Phase returns the current phase. Safe from any goroutine.
func (c *Core) Phase() Phase { return Phase(c.shared.Load() & 0xff) }

// Fault returns the latched fault code, "" when none. Safe from any goroutine.
func (c *Core) Fault() string {
	if i := c.shared.Load() >> 8; i > 0 {
		return FaultCodes[i-1]
	}
	return ""
}

// Estimate returns the estimator's current belief. Call it only from the goroutine that steps the
// core (lockstep drivers, evaluation); other goroutines read LoadMonitor's snapshot.
func (c *Core) Estimate() *estimator.State { return c.est.State() }

// Joints returns the latest calibrated joint state; the same rule as Estimate applies.
func (c *Core) Joints() *solo12.JointState { return &c.js }

// share publishes phase and fault to other goroutines.
func (c *Core) share() {
	var fi uint32
	for i, code := range FaultCodes {
		if code == c.fault {
			fi = uint32(i + 1)
		}
	}
	c.shared.Store(uint32(c.phase) | fi<<8)
}

// Step runs one link tick.
func (c *Core) Step(in *Input, out *Output) {
	c.nEvents, c.nApplied = 0, 0
	out.PolicyTick, out.Obs, out.Action = false, nil, nil
	c.ticks++
	if in.Fresh && in.Sensor != nil {
		dt := 0.001
		if c.sawSensor {
			dt = (in.Now - c.lastFresh).Seconds()
		}
		c.sawSensor, c.lastFresh = true, in.Now
		c.jmap.ReadSensor(in.Sensor, &c.js)
		if c.calibrated() {
			c.est.Update(&in.Sensor.IMU, &c.js, dt)
		}
	}
	c.supervise(in)
	policyTick := c.ticks%c.decim == 0
	if policyTick {
		c.drainCommands(in)
		c.swapOfferedBank()
	}
	c.act(in, out, policyTick)
	if policyTick {
		c.publish(in)
	}
	out.Events = c.events[:c.nEvents]
	out.Applied = c.applied[:c.nApplied]
}

func (c *Core) calibrated() bool { return c.phase >= PhaseStandUp }

// powered reports phases in which the joints track position targets.
func (c *Core) powered() bool {
	return c.phase == PhaseStandUp || c.phase == PhaseHold || c.phase == PhaseRun
}

func (c *Core) enter(p Phase, now time.Duration, reason string) {
	if p == c.phase {
		return
	}
	c.phase, c.since, c.settling = p, now, false
	c.share()
	c.emit(corebus.Event{Kind: corebus.EventModeChange, Mode: p.Mode(), Reason: reason})
}

func (c *Core) emit(e corebus.Event) {
	if c.nEvents == maxEvents {
		c.dropped.Add(1)
		return
	}
	c.events[c.nEvents] = e
	c.nEvents++
	c.outbox.Offer(e)
}

// standUpSlack is how far (rad) past the further of its limit and its start a joint may go during
// the stand-up before the supervisor trips: a robot that collapsed with its motors off sinks on
// a little after the PD takes hold (about 0.2 rad at the hips of the simulated Solo12).
const standUpSlack = 0.3

// driverMode enables every motor with odri's 5 ms driver timeout, and with index compensation
// after an index search: calibrated positions count from the index. Under offsets calibration
// the encoders' current zero is trusted, which index compensation would move to the first
// index pulse a motor crosses (a whole motor turn, 0.7 rad of joint, off for Solo12).
func (c *Core) driverMode() proto.Mode {
	const enable = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2 | 5
	if c.cfg.Calibration == CalibrateIndex {
		return enable | proto.ModeIndexComp1 | proto.ModeIndexComp2
	}
	return enable
}

func setModes(cmd *proto.Command, m proto.Mode) {
	for d := range cmd.Drivers {
		cmd.Drivers[d].Mode = m
	}
}

// act fills the command for the current phase.
func (c *Core) act(in *Input, out *Output, policyTick bool) {
	cmd := &out.Command
	switch c.phase {
	case PhaseWaitReady:
		*cmd = proto.Command{}
		setModes(cmd, c.driverMode())
		if in.Fresh && in.Sensor != nil && solo12.Ready(in.Sensor) == solo12.AllJoints {
			if c.calib != nil {
				c.enter(PhaseCalibrate, in.Now, reasonReady)
			} else {
				c.jmap.Offset = c.cfg.Offsets
				c.jmap.ReadSensor(in.Sensor, &c.js) // this tick's joints, now with the offsets
				c.startStandUp(in.Now)
			}
		}
	case PhaseCalibrate:
		if in.Sensor == nil {
			return
		}
		phase, err := c.calib.Step(in.Sensor, cmd)
		setModes(cmd, c.driverMode())
		if err != nil {
			c.trip(in.Now, faultCalibration, reasonCalibration)
			c.damping(cmd)
			return
		}
		if phase == solo12.PhaseDone {
			c.jmap = *c.calib.Map()
			c.jmap.ReadSensor(in.Sensor, &c.js)
			c.startStandUp(in.Now)
		}
	case PhaseStandUp:
		s := min((in.Now-c.since).Seconds()/c.cfg.StandUp.Seconds(), 1)
		blend := (1 - math.Cos(math.Pi*s)) / 2
		pose := &c.bank.Bank.Contract.DefaultPose
		for j := range c.held {
			c.held[j] = c.standFrom[j] + blend*(float64(pose[j])-c.standFrom[j])
		}
		c.track(cmd)
		if s >= 1 {
			c.hold(in.Now, reasonStood)
			c.settling = c.cfg.AutoRun
			c.autoRun(in.Now)
		}
	case PhaseHold:
		c.track(cmd)
		c.autoRun(in.Now)
	case PhaseRun:
		if c.restartAt != 0 && in.Now >= c.restartAt {
			c.restartSkill(in.Now)
		}
		if policyTick {
			c.policyStep(in, out)
			if c.phase != PhaseRun {
				c.damping(cmd)
				return
			}
		}
		c.slew(c.aim(in.Now))
		c.track(cmd)
	case PhaseDamp:
		c.damping(cmd)
	case PhaseStop:
		c.damping(cmd)
		if in.Now-c.since >= c.cfg.StopDamping {
			c.enter(PhaseOff, in.Now, reasonStopped)
		}
	case PhaseOff:
		*cmd = proto.Command{}
		setModes(cmd, proto.ModeEnableSystem)
	}
}

func (c *Core) startStandUp(now time.Duration) {
	c.standFrom = c.js.Q
	for j, q := range c.js.Q {
		c.standLower[j] = min(c.limits.JointLower[j], q) - standUpSlack
		c.standUpper[j] = max(c.limits.JointUpper[j], q) + standUpSlack
	}
	c.est.Reset()
	c.enter(PhaseStandUp, now, reasonStandUp)
}

func (c *Core) hold(now time.Duration, reason string) {
	pose := &c.bank.Bank.Contract.DefaultPose
	for j := range c.held {
		c.held[j] = float64(pose[j])
	}
	c.enter(PhaseHold, now, reason)
}

// autoRun runs the skill once the hold after the first stand-up has lasted cfg.Settle.
func (c *Core) autoRun(now time.Duration) {
	if c.settling && now-c.since >= c.cfg.Settle {
		c.startRun(now, reasonAutoRun)
	}
}

func (c *Core) startRun(now time.Duration, reason string) {
	c.targets = c.held
	c.prevAction = [12]float32{}
	c.blending, c.restartAt, c.clockFrom = false, 0, now
	c.switcher.newRoute()
	c.enter(PhaseRun, now, reason)
}

// beginRestart hands over to a newly selected skill at a standstill (SwitchConfig.Restart):
// until restartSkill the policy ticks act with the zero action, whose targets are the default
// pose, reached at the slew limit.
func (c *Core) beginRestart(now time.Duration) {
	c.blending, c.restartAt = false, now+c.cfg.Switching.Restart
}

// restartSkill starts the selected skill as a run starts one, keeping what the switcher knows
// of the blocked routes. Its previous action is already none: the hold acted with zeros.
func (c *Core) restartSkill(now time.Duration) {
	c.restartAt, c.clockFrom = 0, now
	c.switcher.restartProgress()
}

// beginBlend starts moving the targets from where the running skill aims now to the skill that
// replaces it; before the robot runs there is nothing to blend.
func (c *Core) beginBlend(now time.Duration) {
	if c.phase != PhaseRun || c.cfg.Blend <= 0 {
		return
	}
	c.blendFrom = *c.aim(now)
	c.blendStart, c.blending = now, true
}

// aim returns the targets of this tick: the policy's, or during a blend the smooth mix
// (1-s) from + s policy with s rising from 0 to 1 as a raised cosine over cfg.Blend.
func (c *Core) aim(now time.Duration) *[12]float64 {
	if !c.blending {
		return &c.targets
	}
	s := (now - c.blendStart).Seconds() / c.cfg.Blend.Seconds()
	if s >= 1 {
		c.blending = false
		return &c.targets
	}
	w := (1 - math.Cos(math.Pi*max(s, 0))) / 2
	for j := range c.mixed {
		c.mixed[j] = c.blendFrom[j] + w*(c.targets[j]-c.blendFrom[j])
	}
	return &c.mixed
}

// track commands the held targets with the bank's PD gains.
func (c *Core) track(cmd *proto.Command) {
	for j := range c.jc.Q {
		c.jc.Q[j] = c.held[j]
		c.jc.Qd[j], c.jc.Tau[j] = 0, 0
		c.jc.Kp[j], c.jc.Kd[j] = c.kp, c.kd
		c.jc.ISat[j] = c.limits.MaxCurrent
	}
	c.jmap.WriteCommand(&c.jc, cmd)
	setModes(cmd, c.driverMode())
}

// damping is the safety controller: zero references, Kp = 0, Kd = safety damping.
func (c *Core) damping(cmd *proto.Command) {
	for j := range c.jc.Q {
		c.jc.Q[j] = c.js.Q[j] // irrelevant with Kp = 0; keeps the wire value small
		c.jc.Qd[j], c.jc.Tau[j], c.jc.Kp[j] = 0, 0, 0
		c.jc.Kd[j] = c.limits.SafetyDamping
		c.jc.ISat[j] = c.limits.MaxCurrent
	}
	c.jmap.WriteCommand(&c.jc, cmd)
	setModes(cmd, c.driverMode())
}

// slew moves the commanded targets towards aim at most MaxTargetRate per tick.
func (c *Core) slew(aim *[12]float64) {
	if c.limits.MaxTargetRate == 0 {
		c.held = *aim
		return
	}
	step := c.limits.MaxTargetRate * 0.001
	for j := range c.held {
		d := aim[j] - c.held[j]
		c.held[j] += max(-step, min(step, d))
	}
}
