package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/runtime/driver"
	"github.com/dualforce/dualforce/runtime/metrics"
	"github.com/dualforce/dualforce/runtime/mqtt"
	"github.com/dualforce/dualforce/runtime/recorder"
	"github.com/dualforce/dualforce/skills"
	"gopkg.in/yaml.v3"
)

// Options are the run-time choices that are not robot configuration.
type Options struct {
	// AutoRun starts the first skill as soon as the robot stands (demos, simulation); a robot
	// otherwise holds its pose until an operator sends mode "run".
	AutoRun bool
	// Skill is the bank latent to start with; negative: the bank's best measured one
	// (skills.Bank.Best).
	Skill int
	// RealtimePriority, when 1..99, runs every thread of the process with SCHED_FIFO at that
	// priority (see hw/clock); without the privilege the runtime warns and goes on.
	RealtimePriority int
	// ControlCPUs, when not empty, pins the control loop's thread to these CPUs (hw/clock.Pin):
	// on the robot's computer, a core kept free of other work (isolcpus).
	ControlCPUs []int
	// Link, when set, is the master-board link to use instead of opening the configured
	// transport (tests that open a raw socket inside a network namespace; embedding). The
	// runtime closes it on shutdown.
	Link link.Conn
	// Board, when set, is an in-process simulated master board the runtime drives in lockstep
	// (runtime/driver.Lockstep) instead of opening a link: one board tick per core tick, paced to
	// the wall clock at 1 kHz by sleeping, never spinning, and catching up after a stall, so the
	// simulated robot never misses a period however busy the machine is. Everything else (MQTT,
	// metrics, the flight recorder) runs as deployed. For fleets of simulated robots on few cores;
	// Link, the transport and RealtimePriority are not used.
	Board driver.Board
	// StatusEvery logs a status line (mode, skill, fault, base velocity estimate, loop timing)
	// at this interval; 0 logs none.
	StatusEvery time.Duration
	Logger      *slog.Logger
}

// Runtime is a started runtime; Run drives it.
type Runtime struct {
	cfg      config.Config
	log      *slog.Logger
	core     *core.Core
	loader   *driver.BankLoader
	conn     link.Conn
	session  *host.Session
	box      *slider.Box
	percept  *perception.Receiver
	broker   *mqtt.Broker
	adapter  *mqtt.Adapter
	metrics  *metrics.Metrics
	recorder *recorder.Recorder
	drv      *driver.RealTime
	lock     *driver.Lockstep // instead of drv and session with Options.Board
	payloads payloads         // the last tick's sensor and command payloads: session or lock
	closers  []func() error
	status   time.Duration
	opts     Options

	// control-thread state of the observer
	tick      recorder.Tick
	eventBuf  []byte
	inputBuf  []byte
	lastTick  time.Time
	faultIdx  map[string]int
	lastStats host.Stats
}

// Start brings everything up to the point where the control loop can run: on error, whatever was
// opened is closed again.
func Start(ctx context.Context, cfg config.Config, opts Options) (_ *Runtime, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	rt := &Runtime{cfg: cfg, opts: opts, log: log, eventBuf: make([]byte, 0, 1024), inputBuf: make([]byte, 0, recorder.MaxInputBytes), faultIdx: map[string]int{}}
	defer func() {
		if err != nil {
			rt.close()
		}
	}()
	for i, code := range core.FaultCodes {
		rt.faultIdx[code] = i
	}
	if err := rt.startCore(opts); err != nil {
		return nil, err
	}
	if opts.Board != nil {
		if err := rt.startLockstep(opts.Board); err != nil {
			return nil, err
		}
	} else if err := rt.startLink(ctx, opts.Link); err != nil {
		return nil, err
	}
	if err := rt.startSensors(ctx); err != nil {
		return nil, err
	}
	if err := rt.startOperatorInterface(ctx); err != nil {
		return nil, err
	}
	if err := rt.startObservers(); err != nil {
		return nil, err
	}
	rt.status = opts.StatusEvery
	if rt.lock != nil {
		if rt.percept != nil {
			rt.lock.Perception = rt.fillPerception
		}
		return rt, nil
	}
	if opts.RealtimePriority > 0 {
		// Every thread real-time, so the Go scheduler's own threads hand the control loop its
		// CPU without waiting behind other programs; but at the lowest priority, so that the
		// control thread (raised to RealtimePriority by the driver) preempts everything else
		// of ours: SCHED_FIFO does not time-slice between equals, and a TLS handshake or a
		// bank load must never hold the loop's CPU.
		if restore, err := clock.RealtimeProcess(1); err != nil {
			log.Warn("running without real-time priority", "err", err)
		} else {
			rt.closers = append(rt.closers, restore)
		}
	}
	rt.drv = &driver.RealTime{Core: rt.core, Link: rt.session, Slider: rt.box, Observe: rt.observe, Priority: opts.RealtimePriority, CPUs: opts.ControlCPUs}
	// A raw Ethernet link stamps each packet's arrival: the loop can then tell the board's
	// lateness from its own.
	if stamped, ok := rt.conn.(interface{ LastArrival() (time.Time, error) }); ok {
		rt.drv.Arrival = stamped.LastArrival
	}
	if rt.percept != nil {
		rt.drv.Perception = rt.fillPerception
	}
	return rt, nil
}

// Core is the running controller (for tests and tools in the same process).
func (rt *Runtime) Core() *core.Core { return rt.core }

// MQTTURL is the broker the runtime talks to: the embedded one's URL, or the configured one.
func (rt *Runtime) MQTTURL() string {
	if rt.broker != nil {
		return rt.broker.URL()
	}
	return rt.cfg.MQTT.URL
}

// Timing is the control loop's timing record; read it after Run returned. In lockstep only
// Ticks counts: simulated time never misses a period.
func (rt *Runtime) Timing() *driver.Timing {
	if rt.lock != nil {
		return &driver.Timing{Ticks: uint64(rt.lock.Now() / time.Millisecond)}
	}
	return rt.drv.Timing()
}

// Run drives the control loop until ctx ends or the link fails for good, then shuts everything
// down. Run locks the calling goroutine to its OS thread.
func (rt *Runtime) Run(ctx context.Context) error {
	defer rt.close()
	loaderCtx, stop := context.WithCancel(ctx)
	defer stop()
	go rt.loader.Run(loaderCtx, rt.core, 2)
	if rt.status > 0 {
		go rt.logStatus(loaderCtx)
	}
	rt.log.Info("control loop running", "bank", rt.cfg.Bank, "robot", rt.cfg.RobotID, "lockstep", rt.lock != nil)
	var err error
	if rt.lock != nil {
		err = rt.runLockstep(ctx)
	} else {
		err = rt.drv.Run(ctx)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	t := rt.Timing()
	rt.log.Info("control loop stopped", "ticks", t.Ticks, "missed_periods", t.Missed, "board_missed", t.BoardMissed, "overruns", t.Overruns,
		"period_p50", t.Period.Quantile(0.5), "period_p99", t.Period.Quantile(0.99), "compute_p99", t.Compute.Quantile(0.99),
		"read_delay_p99", t.ReadDelay.Quantile(0.99))
	return err
}

// logStatus reports the core's published snapshot; it never touches the control thread.
func (rt *Runtime) logStatus(ctx context.Context) {
	t := time.NewTicker(rt.status)
	defer t.Stop()
	var s corebus.Snapshot
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !rt.core.LoadMonitor(&s) {
			continue
		}
		skill := "none"
		if cat := rt.core.Catalogue(); s.Skill.Source == corebus.SkillBank && s.Skill.Index < len(cat.Skills) {
			skill = cat.Skills[s.Skill.Index].Name
		}
		v := s.Robot.BaseLinVel
		rt.log.Info("status", "phase", rt.core.Phase(), "skill", skill, "fault", s.Fault,
			"vx", fmt.Sprintf("%+.2f", v[0]), "vy", fmt.Sprintf("%+.2f", v[1]),
			"roll", fmt.Sprintf("%+.2f", s.Robot.Attitude[0]), "pitch", fmt.Sprintf("%+.2f", s.Robot.Attitude[1]),
			"ticks", s.Loop.Ticks)
	}
}

func (rt *Runtime) close() {
	for i := len(rt.closers) - 1; i >= 0; i-- {
		if err := rt.closers[i](); err != nil {
			rt.log.Warn("shutdown", "err", err)
		}
	}
	rt.closers = nil
}

func (rt *Runtime) startCore(opts Options) error {
	rt.loader = driver.NewBankLoader()
	c, err := NewCore(rt.cfg, opts, rt.loader.Request)
	rt.core = c
	return err
}

// NewCore builds the controller core exactly as the runtime does from cfg and opts (bank, rate
// override, calibration, limits, gains, slider, switching); replay uses it to re-run a
// recording. requestBank receives bank-load commands (nil refuses them).
func NewCore(cfg config.Config, opts Options, requestBank func(corebus.Command) bool) (*core.Core, error) {
	bank, err := skills.ReadBank(cfg.Bank)
	if err != nil {
		return nil, err
	}
	if cfg.Rates.PolicyHz > 0 {
		bank.Contract.PolicyHz = cfg.Rates.PolicyHz
	}
	loaded, err := core.Load(bank, cfg.Bank, 1)
	if err != nil {
		return nil, err
	}
	cc, err := coreConfig(cfg, opts, bank)
	if err != nil {
		return nil, err
	}
	cc.RequestBank = requestBank
	return core.New(cc, loaded)
}

// coreConfig is the core's configuration from the runtime's cfg and opts for bank.
func coreConfig(cfg config.Config, opts Options, bank *skills.Bank) (core.Config, error) {
	cc := core.DefaultConfig(bank)
	cc.Skill, cc.AutoRun = opts.Skill, opts.AutoRun
	cc.Goal = [3]float64{cfg.Navigation.Goal.X, cfg.Navigation.Goal.Y, cfg.Navigation.Goal.Yaw}
	if cc.Skill < 0 {
		best, err := bank.Best()
		if err != nil {
			return core.Config{}, err
		}
		cc.Skill = best.Index
	}
	switch cfg.Calibration.Mode {
	case config.CalibrationIndex:
		cc.Calibration = core.CalibrateIndex
		cc.Index.Offsets = cfg.Calibration.Offsets
		for j := range cc.Index.Methods {
			cc.Index.Methods[j] = cfg.Calibration.SearchMethod()
		}
	default:
		cc.Calibration = core.CalibrateOffsets
		cc.Offsets = cfg.Calibration.Offsets
	}
	l := &cc.Limits
	l.MaxCurrent = cfg.Limits.MaxCurrent
	for j := range l.JointLower {
		l.JointLower[j] -= cfg.Limits.JointPositionMargin
		l.JointUpper[j] += cfg.Limits.JointPositionMargin
	}
	l.MaxJointVelocity, l.MaxAttitude = cfg.Limits.MaxJointVelocity, cfg.Limits.MaxAttitude
	l.MaxTargetRate, l.OverrunBudget = cfg.Limits.MaxTargetRate, cfg.Limits.LoopOverrunBudget
	l.LinkTimeout = cfg.Limits.LinkTimeout
	if cfg.Gains.Kp != nil {
		cc.Kp = *cfg.Gains.Kp
	}
	if cfg.Gains.Kd != nil {
		cc.Kd = *cfg.Gains.Kd
	}
	cc.SliderRequired = cfg.Slider.Enabled
	o := &cfg.Obstacle
	cc.Switching.Enabled, cc.Switching.Clearance, cc.Switching.Cooldown = o.Enabled, o.ClearanceM, o.Cooldown
	cc.Switching.StallAfter, cc.Switching.MinProgress, cc.Switching.GoalRadius = o.StallAfter, o.MinProgressM, o.GoalRadiusM
	cc.Switching.Detour, cc.Switching.KeepMeasured = o.DetourM, o.KeepMeasured
	cc.Blend, cc.RecallMaxDistance = cfg.Transitions.Blend, cfg.Recall.MaxDistance
	cc.Switching.Restart = cfg.Transitions.Restart
	return cc, nil
}

func (rt *Runtime) startLink(ctx context.Context, given link.Conn) error {
	t := rt.cfg.Transport
	var name string
	switch {
	case given != nil:
		rt.conn, name = given, t.Kind+" (given)"
	case t.Kind == config.TransportEthernet:
		conn, err := link.OpenEthernet(t.Iface)
		if err != nil {
			return err
		}
		rt.conn, name = conn, t.Iface
	case t.Kind == config.TransportUDP:
		conn, err := link.DialUDP(t.Addr)
		if err != nil {
			return err
		}
		rt.conn, name = conn, "udp "+t.Addr
	default:
		return fmt.Errorf("app: transport %q runs in-process only (simulation and evaluation drive the core in lockstep)", t.Kind)
	}
	rt.closers = append(rt.closers, rt.conn.Close)
	// The loop must keep ticking through silence, so Receive gives up after two periods; the
	// core's own link timeout (20 ms) decides when silence is a fault.
	rt.session = host.New(rt.conn, host.Config{Interface: name, SensorTimeout: 2 * time.Millisecond, Logger: rt.log})
	rt.payloads = rt.session
	ack, err := rt.session.Connect(ctx)
	if err != nil {
		return err
	}
	rt.log.Info("master board connected", "link", name, "session", rt.session.SessionID(), "spi_connected", fmt.Sprintf("%06b", ack.SPIConnected))
	return nil
}

// lockstepSession is the host's session id in lockstep (any non-zero id: the board is ours).
const lockstepSession = 0x5e55

// startLockstep connects the lockstep driver to the in-process board.
func (rt *Runtime) startLockstep(b driver.Board) error {
	rt.lock = &driver.Lockstep{Core: rt.core, Board: b, SessionID: lockstepSession, Observe: rt.observe}
	rt.payloads = rt.lock
	if err := rt.lock.Connect(); err != nil {
		return err
	}
	rt.log.Info("simulated master board connected in lockstep", "session", lockstepSession)
	return nil
}

// runLockstep steps the core and the board once per millisecond of wall time, sleeping while
// ahead and stepping without sleep while behind.
func (rt *Runtime) runLockstep(ctx context.Context) error {
	start := time.Now()
	for ctx.Err() == nil {
		if err := rt.lock.Step(); err != nil {
			return err
		}
		if ahead := rt.lock.Now() - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	return ctx.Err()
}

func (rt *Runtime) startSensors(ctx context.Context) error {
	if s := rt.cfg.Slider; s.Enabled {
		box, err := slider.Open(ctx, slider.Config{Path: s.Path, StaleAfter: time.Duration(s.StaleMs) * time.Millisecond})
		if err != nil {
			return fmt.Errorf("app: slider box (the hardware E-stop; set slider.enabled false only in simulation): %w", err)
		}
		rt.box = box
		rt.closers = append(rt.closers, box.Close)
	}
	if addr := rt.cfg.Perception.Listen; addr != "" {
		recv, err := perception.Listen(addr, perception.ReceiverOptions{})
		if err != nil {
			return err
		}
		rt.percept = recv
		rt.closers = append(rt.closers, recv.Close)
	}
	return nil
}

func (rt *Runtime) startOperatorInterface(ctx context.Context) error {
	m := rt.cfg.MQTT
	mc := mqtt.Config{RobotID: rt.cfg.RobotID, BankDir: filepath.Dir(rt.cfg.Bank), Heartbeat: m.HeartbeatWindow, Logger: rt.log}
	if m.Embedded {
		broker, err := mqtt.StartBroker(mqtt.BrokerConfig{RobotID: rt.cfg.RobotID, Address: m.Listen, PasswordFile: m.PasswordFile, Logger: rt.log})
		if err != nil {
			return err
		}
		rt.broker = broker
		rt.closers = append(rt.closers, broker.Close)
		mc.Broker, mc.Credentials = broker.URL(), broker.RobotCredentials()
	} else {
		creds, err := mqtt.LoadCredentials(m.CredentialsFile, os.Getenv)
		if err != nil {
			return err
		}
		mc.Broker, mc.Credentials, mc.TLS = m.URL, creds, mqtt.TLSFiles{CAFile: m.CAFile}
	}
	adapter, err := mqtt.New(mc, rt.core)
	if err != nil {
		return err
	}
	rt.adapter = adapter
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { adapter.Run(actx); close(done) }()
	rt.closers = append(rt.closers, func() error { cancel(); <-done; return nil })
	return nil
}

func (rt *Runtime) startObservers() error {
	if addr := rt.cfg.Metrics.Listen; addr != "" {
		// Indexed by corebus.Mode; metrics reserves "unknown" for out-of-range indexes.
		modes := []string{"none"}
		for m := corebus.ModeStop; m <= corebus.ModeRun; m++ {
			modes = append(modes, m.String())
		}
		m, err := metrics.New(metrics.Options{Modes: modes, FaultReasons: core.FaultCodes})
		if err != nil {
			return err
		}
		rt.metrics = m
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			if err := m.ListenAndServe(ctx, addr, rt.log); err != nil {
				rt.log.Error("metrics endpoint", "addr", addr, "err", err)
			}
			close(done)
		}()
		rt.closers = append(rt.closers, func() error { cancel(); <-done; return nil })
	}
	if r := rt.cfg.Recorder; r.Dir != "" {
		rec, err := recorder.New(recorder.Options{
			Dir: r.Dir, MaxFileBytes: int64(r.MaxFileMB) << 20, MaxFiles: r.MaxFiles, MaxFileDuration: r.MaxFileDuration,
			Metadata: rt.recordingMetadata(),
			Logger:   rt.log,
		})
		if err != nil {
			return err
		}
		rt.recorder = rec
		rt.closers = append(rt.closers, rec.Close)
	}
	return nil
}

// Metadata keys of a recording that replay needs to rebuild the core.
const (
	MetaConfig  = "config_yaml"
	MetaAutoRun = "auto_run"
	MetaSkill   = "skill"
)

func (rt *Runtime) recordingMetadata() map[string]string {
	m := map[string]string{"robot_id": rt.cfg.RobotID, "bank": rt.cfg.Bank,
		MetaAutoRun: strconv.FormatBool(rt.opts.AutoRun), MetaSkill: strconv.Itoa(rt.opts.Skill)}
	if y, err := yaml.Marshal(rt.cfg); err == nil {
		m[MetaConfig] = string(y)
	}
	return m
}

func (rt *Runtime) fillPerception(_ time.Duration, p *core.Perception) {
	var d perception.Datagram
	st := rt.percept.Latest(time.Now(), &d)
	p.Valid = st.Valid && !st.Stale
	if !p.Valid {
		return
	}
	p.Position, p.Yaw, p.HeightMap = d.Position, d.Yaw, d.Heights
}

// payloads gives the flight recorder the last tick's payloads as they went over the link:
// hw/host.Session, or driver.Lockstep.
type payloads interface {
	LastSensorPayload() []byte
	LastCommandPayload() []byte
}

// observe feeds the flight recorder and metrics; it runs on the control thread after each send.
func (rt *Runtime) observe(in *core.Input, out *core.Output) {
	now := time.Now()
	if m := rt.metrics; m != nil {
		if !rt.lastTick.IsZero() {
			m.ObserveLoopPeriod(now.Sub(rt.lastTick))
		}
		if in.Overrun {
			m.IncOverruns()
		}
		for i := range out.Events {
			e := &out.Events[i]
			switch e.Kind {
			case corebus.EventFault:
				m.IncFault(rt.faultIndex(e.Fault))
			case corebus.EventModeChange:
				m.SetMode(int(e.Mode))
			case corebus.EventSkillSwitch:
				m.SetSkill(e.To.Index)
			}
		}
		if out.PolicyTick && rt.session != nil {
			st := rt.session.Stats()
			m.AddSensorPacketsLost(st.SensorLoss - rt.lastStats.SensorLoss)
			m.AddCommandPacketsLost(st.CommandLoss - rt.lastStats.CommandLoss)
			m.ObserveLinkRoundTrip(st.LatencyP50)
			rt.lastStats = st
		}
	}
	rt.lastTick = now
	if rt.recorder == nil {
		return
	}
	t := &rt.tick
	t.Index++
	t.UnixNano = now.UnixNano()
	t.Sensor = nil
	if in.Fresh {
		t.Sensor = rt.payloads.LastSensorPayload()
	}
	t.Command = rt.payloads.LastCommandPayload()
	t.Observation, t.Action = out.Obs, out.Action
	rt.eventBuf = rt.eventBuf[:0]
	for i := range out.Events {
		rt.eventBuf = appendEvent(rt.eventBuf, &out.Events[i])
	}
	t.Events = rt.eventBuf
	rt.inputBuf = rt.core.AppendInputRecord(rt.inputBuf[:0], in, out)
	t.Input = rt.inputBuf
	_ = rt.recorder.Record(t) // a full ring drops the tick and counts it; control never waits
}

func (rt *Runtime) faultIndex(code string) int {
	if i, ok := rt.faultIdx[code]; ok {
		return i
	}
	return len(core.FaultCodes)
}

// appendEvent writes one event as a JSON line without allocating (buf has room for a few).
func appendEvent(buf []byte, e *corebus.Event) []byte {
	buf = append(buf, `{"kind":`...)
	buf = strconv.AppendQuote(buf, e.Kind.String())
	if e.Fault != "" {
		buf = append(buf, `,"fault":`...)
		buf = strconv.AppendQuote(buf, e.Fault)
	}
	if e.Reason != "" {
		buf = append(buf, `,"reason":`...)
		buf = strconv.AppendQuote(buf, e.Reason)
	}
	switch e.Kind {
	case corebus.EventModeChange:
		buf = append(buf, `,"mode":`...)
		buf = strconv.AppendQuote(buf, e.Mode.String())
	case corebus.EventSkillSwitch:
		buf = append(buf, `,"to":`...)
		buf = strconv.AppendInt(buf, int64(e.To.Index), 10)
		buf = appendSwitchReport(buf, &e.Switch)
	case corebus.EventRouteBlocked:
		buf = append(buf, `,"from":`...)
		buf = strconv.AppendInt(buf, int64(e.From.Index), 10)
		buf = appendSwitchReport(buf, &e.Switch)
	case corebus.EventCommandDone:
		buf = append(buf, `,"ok":`...)
		buf = strconv.AppendBool(buf, e.OK)
		if e.Recalled.Valid {
			buf = append(buf, `,"recalled":`...)
			buf = strconv.AppendInt(buf, int64(e.Recalled.Index), 10)
		}
	}
	return append(buf, "}\n"...)
}

// appendSwitchReport adds why the core switched by itself: the trigger, the matching world and
// the candidates, best first.
func appendSwitchReport(buf []byte, r *corebus.SwitchReport) []byte {
	if r.Trigger == corebus.TriggerNone {
		return buf
	}
	buf = append(buf, `,"trigger":`...)
	buf = strconv.AppendQuote(buf, r.Trigger.String())
	buf = append(buf, `,"world":`...)
	buf = strconv.AppendQuote(buf, r.World)
	buf = append(buf, `,"candidates":[`...)
	for i, c := range r.Listed() {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(c.Index), 10)
	}
	buf = append(buf, `],"chosen":`...)
	return strconv.AppendQuote(buf, r.Chosen)
}
