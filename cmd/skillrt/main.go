// Command skillrt is the on-robot runtime: it loads a skill bank, brings Solo12 up over the ODRI
// master-board link, runs the chosen skill at the bank's policy rate, keeps the robot safe, and
// takes operator commands over MQTT. It is pure Go (CGO_ENABLED=0) and cross-compiles to
// linux/arm64 for the robot's computer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `skillrt: run a dualforce skill bank on Solo12.

Usage:
  skillrt run --config robot.yaml [--auto-run] [--skill N]   the runtime (Ctrl-C stops: damp, then off)
  skillrt config                                             print an example config with every default
  skillrt op list|switch|mode|stop|estop|clear|watch ...     operator commands over MQTT (skillrt op --help)
  skillrt replay [--bank B] flight-*.mcap ...                re-run the core on a recording; report the first divergence
  skillrt keep-awake [--cpus 0,1]                            keep CPUs from idling (a VM's wake-up latency; skillrt keep-awake --help)

The config (YAML, unknown keys are errors) names the robot, the bank, the link (ethernet to the
real board, udp to the simulator or the board emulator), calibration, safety limits, the slider
box, perception, MQTT, metrics and the flight recorder. Secrets never go in it or on the command
line: MQTT credentials come from files named in the config or from SOLO_MQTT_USERNAME and
SOLO_MQTT_PASSWORD.

Raw Ethernet needs CAP_NET_RAW: sudo setcap cap_net_raw+ep bin/skillrt (again after each build).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stderr)
	case "config":
		return configCmd(stdout)
	case "op":
		return opCmd(ctx, args[1:], stdout, stderr)
	case "replay":
		return replayCmd(args[1:], stdout, stderr)
	case "keep-awake":
		return keepAwakeCmd(ctx, args[1:], stderr)
	}
	fmt.Fprintf(stderr, "skillrt: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// newFlags returns a flag set whose -h prints help text and exits 0 rather than 2.
func newFlags(name, help string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, help)
		fs.PrintDefaults()
	}
	return fs
}

// parse runs fs.Parse and returns the exit code to use, or -1 to go on.
func parse(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	return -1
}
