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
	"syscall"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

const usage = `boardemu: an emulated ODRI master board (protocol v4) with a first-order motor plant.

Usage:
  boardemu --transport udp --listen 127.0.0.1:9750
  boardemu --transport ethernet --iface veth0

The board boots in WAITING_FOR_INIT and follows the firmware: init -> 51 ms of SPI
autodetection -> acks until the first command -> control, with the 20 ms command watchdog
(ERROR, motors disabled, until the next init, whatever its session id) and the 1 s ack
timeout.
Enabled motors align for --alignment before their ready bit; the encoders count from their
power-on angle, every index pulse at motor angle 0 (mod 2 pi).

Transports:
  udp       frames tunnelled one per datagram; the board answers whoever spoke last
            (no privileges needed: for runs on one machine)
  ethernet  raw frames of EtherType 0x88B5 on an interface, as the real board speaks;
            needs CAP_NET_RAW (sudo setcap cap_net_raw+ep bin/boardemu, or root)

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("boardemu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	transport := fs.String("transport", "udp", "udp or ethernet")
	listen := fs.String("listen", "127.0.0.1:9750", "udp: address to listen on")
	iface := fs.String("iface", "", "ethernet: network interface, e.g. enp3s0 (list them with: ip link)")
	lockstep := fs.Bool("lockstep", false, "tick once per received init or command instead of at 1 kHz (benchmarks)")
	version := fs.Uint("protocol-version", proto.Version, "protocol version to emulate: 3 sends v3 acks and sensor packets, others answer v4 inits with a version-mismatch ack")
	absent := fs.Uint("absent-drivers", 0, "bit mask of driver cards that are not wired (bit i = driver i never answers SPI)")
	alignment := fs.Duration("alignment", 100*time.Millisecond, "rotor alignment time after a motor's enable bit")
	imuStart := fs.Duration("imu-startup", 0, "the IMU reports all zeros for this long after start, as a real one does")
	priority := fs.Int("rt-priority", 20, "SCHED_FIFO priority of the process (0: ordinary scheduling); without CAP_SYS_NICE it warns and goes on")
	every := fs.Duration("stats", 10*time.Second, "log board statistics this often (0: never)")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if fs.NArg() > 0 || *version > 0xffff || *absent > 0x3f || *alignment < time.Millisecond || *imuStart < 0 ||
		*priority < 0 || *priority > 99 {
		fmt.Fprintln(stderr, "boardemu: bad arguments (see --help): extra words, a protocol version above 65535, "+
			"a driver mask above 0x3f, an alignment under 1 ms, a negative IMU startup or a priority outside 0..99")
		return 2
	}

	conn, mac, where, err := open(*transport, *listen, *iface)
	if err != nil {
		log.Error("cannot open the link", "err", err)
		return 1
	}
	defer conn.Close()

	plant, err := board.NewFirstOrderPlant(board.FirstOrderConfig{})
	if err != nil {
		log.Error("plant", "err", err)
		return 1
	}
	b, err := board.New(board.Config{
		Version:         uint16(*version),
		AbsentDrivers:   uint8(*absent),
		AlignmentTicks:  int(*alignment / time.Millisecond),
		IMUStartupTicks: int(*imuStart / time.Millisecond),
	}, plant)
	if err != nil {
		log.Error("board", "err", err)
		return 1
	}
	loopPriority := 0 // the tick and reader threads run above the rest of the process
	if *priority > 0 {
		if restore, err := clock.RealtimeProcess(*priority); err != nil {
			log.Warn("running without real-time priority: the 1 kHz loop may stall on a busy machine", "err", err)
		} else {
			defer restore()
			loopPriority = min(*priority+10, 99)
		}
	}
	srv := server.New(b, conn, server.Options{MAC: mac, Lockstep: *lockstep, Priority: loopPriority, Logger: log})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("emulated master board up", "transport", *transport, "at", where, "mac", mac.String(),
		"protocol_version", *version, "lockstep", *lockstep)
	if *every > 0 {
		go report(ctx, srv, *every, log)
	}
	if err := srv.Run(ctx); err != nil {
		log.Error("board stopped", "err", err)
		return 1
	}
	log.Info("board stopped", "ticks", srv.Stats().Ticks)
	return 0
}

// open returns the board side of the link, the board's source MAC and where it listens.
func open(transport, listen, iface string) (link.Conn, proto.MAC, string, error) {
	switch transport {
	case "udp":
		u, err := link.ListenUDP(listen)
		if err != nil {
			return nil, proto.MAC{}, "", err
		}
		return u, server.DefaultMAC, u.Addr().String(), nil
	case "ethernet":
		if iface == "" {
			return nil, proto.MAC{}, "", errors.New("--transport ethernet needs --iface (see `ip link`)")
		}
		e, err := link.OpenEthernet(iface)
		if err != nil {
			return nil, proto.MAC{}, "", err
		}
		return e, e.LocalMAC(), iface, nil
	}
	return nil, proto.MAC{}, "", fmt.Errorf("unknown --transport %q: want udp or ethernet", transport)
}

// report logs the server's counters and the board's state every period.
func report(ctx context.Context, srv *server.Server, period time.Duration, log *slog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var state board.State
		var session uint16
		if err := srv.Do(ctx, func(b *board.Board) { state, session = b.State(), b.SessionID() }); err != nil {
			return
		}
		st := srv.Stats()
		log.Info("board", "state", state.String(), "session", session, "ticks", st.Ticks, "missed_ticks", st.MissedTicks,
			"frames_in", st.FramesIn, "frames_out", st.FramesOut, "malformed", st.Malformed, "overflow", st.Overflow,
			"send_errors", st.SendErrors, "tick_late_p99", st.LatenessP99, "longest_gap", st.LongestGap)
	}
}
