package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

const usage = `linkcheck: check the link to an ODRI master board (protocol v4).

Usage:
  linkcheck --transport ethernet --iface enp3s0 [--duration 30s]
  linkcheck --transport udp --addr 127.0.0.1:9750      (an emulated board: cmd/boardemu)
  linkcheck --transport ethernet --iface enp3s0 --listen   (watch a robot another program runs)

It sends inits until the board acknowledges (2.5 s at most), then commands at the board's
1 kHz pace: every motor enabled with zero gains and zero current, so nothing moves. Once per
second it prints commands sent, sensor packets received, command loss (counted by the board),
sensor loss (gaps in sensor_index), the command round trip p50/p99 and each driver's status.
With --listen it sends nothing and follows the session it sees, then each new one (the board
restarts sensor_index for every session: that is not counted as loss).

If the board stops taking commands (its 20 ms watchdog fired because this program stalled) or
its packets stop for 50 ms, linkcheck says so and connects a new session; it exits with status
1 when it cannot connect at all, explaining why: no answer (interface, cable, power-on order),
protocol version mismatch, a v3 board, another program holding the board, missing privileges.

Raw Ethernet needs CAP_NET_RAW: sudo setcap cap_net_raw+ep bin/linkcheck (again after each build).

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	transport, iface, addr string
	duration               time.Duration
	session                uint
	listen                 bool
	priority               int
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("linkcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.transport, "transport", "ethernet", "ethernet or udp")
	fs.StringVar(&o.iface, "iface", "", "ethernet: network interface the board is cabled to, e.g. enp3s0 (list them with: ip link)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:9750", "udp: address of the emulated board")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: run until Ctrl-C)")
	fs.UintVar(&o.session, "session", 0, "session id (0: random)")
	fs.BoolVar(&o.listen, "listen", false, "listener mode: send nothing, follow the session another program runs")
	fs.IntVar(&o.priority, "rt-priority", 20, "SCHED_FIFO priority of the process (0: ordinary scheduling); without CAP_SYS_NICE it warns and goes on")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.duration < 0 || o.session > 0xffff || o.priority < 0 || o.priority > 99 ||
		(o.transport != "ethernet" && o.transport != "udp") {
		fmt.Fprintln(stderr, "linkcheck: bad arguments (see --help): extra words, a transport other than "+
			"ethernet or udp, a negative duration, a session id above 65535 or a priority outside 0..99")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	conn, cfg, err := open(o)
	if err != nil {
		log.Error("cannot open the link", "err", err)
		return 1
	}
	defer conn.Close()
	cfg.SessionID, cfg.Logger = uint16(o.session), log

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	// The control loop keeps one thread; the whole process runs real-time so that the Go
	// scheduler's own threads are not starved by other work (see clock.RealtimeProcess).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if o.priority > 0 {
		if restore, err := clock.RealtimeProcess(o.priority); err != nil {
			log.Warn("running without real-time priority: the loop may stall on a busy machine", "err", err)
		} else {
			defer restore()
		}
	}
	c := checker{out: stdout, log: log, start: time.Now()}
	if err := c.loop(ctx, conn, cfg, o.listen); err != nil {
		log.Error("link check failed", "err", err)
		return 1
	}
	return 0
}

// open returns the host side of the link and a session configuration naming it.
func open(o options) (link.Conn, host.Config, error) {
	switch o.transport {
	case "ethernet":
		if o.iface == "" {
			return nil, host.Config{}, errors.New("--transport ethernet needs --iface: the interface the board's cable is plugged into (see: ip link)")
		}
		e, err := link.OpenEthernet(o.iface)
		if err != nil {
			return nil, host.Config{}, err
		}
		return e, host.Config{Interface: o.iface, MAC: e.LocalMAC()}, nil
	case "udp":
		u, err := link.DialUDP(o.addr)
		if err != nil {
			return nil, host.Config{}, err
		}
		return u, host.Config{Interface: "udp " + o.addr}, nil
	}
	return nil, host.Config{}, fmt.Errorf("unknown --transport %q", o.transport)
}

// checker runs sessions and prints their statistics.
type checker struct {
	out      io.Writer
	log      *slog.Logger
	start    time.Time
	restarts int
}

// loop connects sessions until ctx ends. A session that fails while running (the board stopped
// taking our commands, or its packets stopped) is replaced by a new one; failing to connect, or
// any other error, ends the check.
func (c *checker) loop(ctx context.Context, conn link.Conn, cfg host.Config, listen bool) error {
	for {
		s := host.New(conn, cfg)
		var err error
		if listen {
			err = s.Listen(ctx)
		} else {
			_, err = s.Connect(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return explain(err, cfg.Interface)
		}
		err = c.session(ctx, s, listen)
		c.print(s, nil)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, host.ErrSensorTimeout) || errors.Is(err, host.ErrCommandsIgnored):
			c.restarts++
			c.log.Warn("session lost, connecting a new one", "err", err, "restarts", c.restarts)
			cfg.SessionID = 0
		default:
			return err
		}
	}
}

// session runs one session, paced by the board's sensor packets, printing once per second.
func (c *checker) session(ctx context.Context, s *host.Session, listen bool) error {
	var cmd proto.Command
	for d := range cmd.Drivers {
		cmd.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
	}
	var in proto.Sensor
	next := time.Now().Add(time.Second)
	for ctx.Err() == nil {
		if !listen {
			if err := s.Send(&cmd); err != nil {
				return err
			}
		}
		if err := s.Receive(&in); err != nil {
			return err
		}
		if now := time.Now(); now.After(next) {
			next = next.Add(time.Second)
			c.print(s, &in)
		}
	}
	return nil
}

// print writes one statistics line and, with a sensor packet, each driver's status.
func (c *checker) print(s *host.Session, in *proto.Sensor) {
	st := s.Stats()
	fmt.Fprintf(c.out, "%5.0fs session %5d  sent %7d  received %7d  command loss %d  sensor loss %d  foreign %d  "+
		"round trip p50 %v p99 %v  restarts %d\n", time.Since(c.start).Seconds(), st.SessionID, st.CommandsSent,
		st.SensorsReceived, st.CommandLoss, st.SensorLoss, st.ForeignSensors,
		st.LatencyP50.Round(time.Microsecond), st.LatencyP99.Round(time.Microsecond), c.restarts)
	if in == nil {
		return
	}
	for _, d := range s.Drivers(in) {
		fmt.Fprintf(c.out, "        %v\n", d)
	}
}

// explain adds what to do to connection errors that do not say it themselves.
func explain(err error, where string) error {
	var vm *proto.VersionMismatchError
	switch {
	case errors.As(err, &vm):
		return fmt.Errorf("%w: flash the board with a protocol v%d firmware, or use a host built for v%d", err, vm.Host, vm.Board)
	case errors.Is(err, host.ErrNoAnswer) && strings.HasPrefix(where, "udp "):
		return fmt.Errorf("%w (over the UDP tunnel: is cmd/boardemu running and listening at %s?)", err, strings.TrimPrefix(where, "udp "))
	}
	return err
}
