// Command solo12sim is the simulated Solo12 behind its master board: a MuJoCo robot in a world,
// served over raw Ethernet or the UDP tunnel so that a program talking master-board frames
// cannot tell it from the robot, with the robot's perception stream (motion-capture pose and
// height map) on UDP. See package sim/robotboard.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "solo12sim:", err)
		os.Exit(1)
	}
}

// processPriority is the SCHED_FIFO priority of the process's threads other than the board's
// tick and reader, in real time: above every ordinary process, so that the Go scheduler never
// makes the tick wait for one of its own threads queued behind them (see clock.RealtimeProcess).
const processPriority = 1

// errUsage marks bad flags (already reported with the usage text).
var errUsage = errors.New("usage")

type options struct {
	world          string
	seed           uint64
	jitter         bool
	substeps       int
	transport      string
	listen         string
	iface          string
	perceptionAddr string
	perceptionHz   float64
	realtime       bool
	priority       int
	statsEvery     time.Duration
	logLevel       slog.Level
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("solo12sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.world, "world", "flat", "world: a scenario YAML file, or a built-in world ("+strings.Join(worlds.BuiltinNames(), ", ")+")")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the world's jitter and the sensor noise")
	fs.BoolVar(&o.jitter, "jitter", true, "lay the world out with its jitter drawn from --seed; false: where its file puts the box and the goal (make run, whose runtime is sent to the goal cmd/skillrt/sim.yaml names)")
	fs.IntVar(&o.substeps, "substeps", 0, "physics and motor-PD substeps per 1 ms tick (0: 10 in real time, the cards' 10 kHz PD loop; 1 in lockstep)")
	fs.StringVar(&o.transport, "transport", "udp", "link to the host: udp (the UDP tunnel, no privileges) or ethernet (raw AF_PACKET on --iface)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9750", "UDP tunnel address to serve on (--transport udp)")
	fs.StringVar(&o.iface, "iface", "", "network interface the host's cable is on (--transport ethernet; needs CAP_NET_RAW: sudo setcap cap_net_raw,cap_sys_nice+ep solo12sim)")
	fs.StringVar(&o.perceptionAddr, "perception-addr", "127.0.0.1:9751", "UDP destination of the perception stream (empty: no stream)")
	fs.Float64Var(&o.perceptionHz, "perception-hz", 50, "perception samples per second of simulated time (1..1000; 1000 divided by it is rounded to whole ticks)")
	fs.BoolVar(&o.realtime, "realtime", true, "tick at 1 kHz on the wall clock; false: lockstep, one tick per received init or command")
	fs.IntVar(&o.priority, "priority", 40, "real time only: SCHED_FIFO priority of the tick and reader threads, 1..99; the process's other threads then run at SCHED_FIFO 1 (0: none; needs CAP_SYS_NICE, else a warning)")
	fs.DurationVar(&o.statsEvery, "stats", time.Second, "interval of the statistics log lines (0: only at exit)")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(stderr, `solo12sim: the simulated Solo12 behind its ODRI master board (protocol v4).

A host program (the runtime, or anything speaking master-board frames) connects as it would to the
robot. The robot powers on standing at the world's start with its motors off, and sinks until a
host enables them; its encoders count from that pose, so a host's joint offsets are the standing
pose. Perception datagrams (hw/perception, version 1) carry the motion-capture pose and the 11x11
height map.

Usage:
  solo12sim [flags]
  solo12sim --transport ethernet --iface veth0 --world obstacle --seed 3

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	bad := func(format string, a ...any) (*options, error) {
		fmt.Fprintf(stderr, "solo12sim: "+format+"\n", a...)
		fs.Usage()
		return nil, errUsage
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments: %q", fs.Args())
	case o.transport != "udp" && o.transport != "ethernet":
		return bad("--transport %q: want udp or ethernet", o.transport)
	case o.transport == "ethernet" && o.iface == "":
		return bad("--transport ethernet needs --iface")
	case !(o.perceptionHz >= 1 && o.perceptionHz <= 1000):
		return bad("--perception-hz %v: want 1..1000", o.perceptionHz)
	case o.substeps < 0 || o.substeps > 100:
		return bad("--substeps %d: want 0..100", o.substeps)
	case o.priority < 0 || o.priority > 99:
		return bad("--priority %d: want 0..99", o.priority)
	case o.statsEvery < 0:
		return bad("--stats %v: want a positive interval or 0", o.statsEvery)
	}
	if o.substeps == 0 {
		o.substeps = 1
		if o.realtime {
			o.substeps = 10
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	scenario, err := robotboard.LoadScenario(o.world)
	if err != nil {
		return err
	}
	if !o.jitter {
		scenario.Jitter = nil
	}
	if o.realtime && o.priority > 0 {
		restore, err := clock.RealtimeProcess(processPriority)
		if err != nil {
			log.Warn("running the Go runtime's threads at ordinary priority: ticks may be missed on a busy machine", "err", err)
		} else {
			defer restore()
		}
	}
	robot, err := robotboard.New(robotboard.Config{Scenario: scenario, Seed: o.seed, Substeps: o.substeps, Logger: log})
	if err != nil {
		return err
	}
	defer robot.Close()

	conn, where, err := openLink(o)
	if err != nil {
		return err
	}
	defer conn.Close()
	opts := robotboard.ServeOptions{
		Lockstep: !o.realtime, Logger: log,
		PerceptionPeriod: max(1, int(math.Round(1000/o.perceptionHz))),
	}
	if o.realtime {
		opts.Priority = o.priority // lockstep has no deadline to keep
	}
	if e, ok := conn.(*link.Ethernet); ok {
		opts.MAC = e.LocalMAC()
	}
	if o.perceptionAddr != "" {
		sender, err := perception.Dial(o.perceptionAddr)
		if err != nil {
			return err
		}
		defer sender.Close()
		opts.Perception = sender
	}
	srv, err := robot.Serve(conn, opts)
	if err != nil {
		return err
	}
	layout := robot.Layout()
	boxes, goal := 0, "none"
	if layout != nil {
		boxes = len(layout.Boxes)
		if g := layout.Goal; g != nil {
			goal = fmt.Sprintf("%.2f,%.2f", g.X, g.Y)
		}
	}
	log.Info("serving the simulated Solo12", "world", scenario.Name, "seed", o.seed, "jitter", o.jitter, "boxes", boxes,
		"goal_xy_m", goal, "transport", o.transport, "address", where, "realtime", o.realtime, "substeps", o.substeps,
		"perception_addr", o.perceptionAddr, "perception_period_ms", opts.PerceptionPeriod)

	runCtx, cancel := context.WithCancel(ctx)
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		logStats(runCtx, log, srv, layout, o.statsEvery)
	}()
	err = srv.Run(runCtx)
	cancel()
	<-statsDone
	logStatus(log, "final statistics", srv.Status(), layout)
	if err != nil {
		return err
	}
	log.Info("shut down cleanly")
	return nil
}

func openLink(o *options) (link.Conn, string, error) {
	if o.transport == "ethernet" {
		e, err := link.OpenEthernet(o.iface)
		if err != nil {
			if errors.Is(err, link.ErrNotPermitted) {
				return nil, "", fmt.Errorf("%w (run as root, or: sudo setcap cap_net_raw,cap_sys_nice+ep $(which solo12sim))", err)
			}
			return nil, "", err
		}
		return e, o.iface, nil
	}
	u, err := link.ListenUDP(o.listen)
	if err != nil {
		return nil, "", err
	}
	return u, u.Addr().String(), nil
}

func logStats(ctx context.Context, log *slog.Logger, srv *robotboard.Server, layout *worlds.Layout, every time.Duration) {
	if every == 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			logStatus(log, "statistics", srv.Status(), layout)
		}
	}
}

// logStatus logs the board's statistics and where the robot is: in a world with a goal, how far
// from it, whether it is within the goal's radius now, and whether it has been at any tick so
// far (what evaluation counts as reaching the goal: a skill may walk on past it).
func logStatus(log *slog.Logger, msg string, st robotboard.Status, layout *worlds.Layout) {
	attrs := []any{
		"ticks", st.BoardTicks, "missed_ticks", st.MissedTicks,
		"lateness_p50", st.LatenessP50, "lateness_p99", st.LatenessP99, "lateness_max", st.LatenessMax,
		"longest_gap", st.LongestGap, "board", st.State.String(), "sim_time", st.Truth.Time,
		"frames_in", st.FramesIn, "frames_out", st.FramesOut, "malformed", st.Malformed,
		"perception_sent", st.PerceptionSent, "perception_errors", st.PerceptionErrors,
		"base_height_m", fmt.Sprintf("%.3f", st.Truth.Pos[2]), "fell", st.Truth.Fell,
		"base_xy_m", fmt.Sprintf("%.2f,%.2f", st.Truth.Pos[0], st.Truth.Pos[1]),
	}
	if layout != nil && layout.Goal != nil {
		d := math.Hypot(layout.Goal.X-st.Truth.Pos[0], layout.Goal.Y-st.Truth.Pos[1])
		attrs = append(attrs, "goal_distance_m", fmt.Sprintf("%.2f", d), "at_goal", d <= layout.Goal.Radius, "goal_reached", st.GoalReached)
	}
	if st.Err != nil {
		attrs = append(attrs, "physics_error", st.Err)
	}
	log.Info(msg, attrs...)
}
