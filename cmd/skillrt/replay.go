package main

import (
	"fmt"
	"io"

	"github.com/dualforce/dualforce/runtime/replay"
)

const replayHelp = `skillrt replay: re-run the controller core on a flight recording.

Rebuilds the core from the config the recording carries, feeds it each recorded tick (sensor
packet, time, slider state, perception, the operator commands applied) and compares the command
it produces with the command that went on the wire. Give the files of one run in order, the
first starting at power-on (skillrt writes them as flight-<time>-<seq>.mcap).

On the machine that recorded, every command comes out identical byte for byte. On another CPU
(an arm64 robot replaying an amd64 recording, or the reverse) the policy's float32 sums round
differently and a joint target may move by a few wire steps: a command whose references and
gains are all within --tolerance of the recorded ones is the same decision, and replay says so
and reports the largest such difference. Anything beyond it, or another driver mode, is a logic
divergence. Exit status 0: identical or within float tolerance; 1: a logic divergence (tick,
field, difference, both commands) or an unreadable recording; 2: bad arguments.

Flags:
`

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("skillrt replay", replayHelp, stderr)
	bank := fs.String("bank", "", "replay with this bank instead of the one the recording names")
	tolerance := fs.Float64("tolerance", replay.DefaultTolerance, "largest difference of a reference or gain (rad, rad/s, A, A/rad, A*s/rad on the motor side) that is float rounding, not a divergence; 0: byte for byte")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if !(*tolerance >= 0) {
		fmt.Fprintf(stderr, "skillrt replay: --tolerance %v: want a value >= 0\n", *tolerance)
		return 2
	}
	res, err := replay.Run(fs.Args(), replay.Options{Bank: *bank, Tolerance: *tolerance})
	if err != nil {
		ticks := uint64(0)
		if res != nil {
			ticks = res.Ticks
		}
		fmt.Fprintf(stderr, "skillrt replay: after %d ticks: %v\n", ticks, err)
		return 1
	}
	if d := res.Divergence; d != nil {
		fmt.Fprintf(stdout, "LOGIC DIVERGENCE at tick %d: %s differs by %.3g, beyond the float tolerance %.3g (byte %d of the command)\n",
			d.Tick, d.Field, d.Difference, res.Tolerance, d.Offset)
		fmt.Fprintf(stdout, "  %d ticks replayed before it: %d commands identical, %d within float tolerance\n",
			res.Ticks-1, res.Identical, res.Compared-1-res.Identical)
		fmt.Fprintf(stdout, "  recorded: %+v\n  replayed: %+v\n", d.Recorded.Drivers, d.Replayed.Drivers)
		return 1
	}
	if res.Largest == nil {
		fmt.Fprintf(stdout, "replayed %d ticks: %d commands identical byte for byte\n", res.Ticks, res.Compared)
		return 0
	}
	l := res.Largest
	fmt.Fprintf(stdout, "replayed %d ticks: no logic divergence; %d commands identical byte for byte, %d within float tolerance\n",
		res.Ticks, res.Identical, res.Compared-res.Identical)
	fmt.Fprintf(stdout, "  largest difference %.3g (tolerance %.3g) at tick %d: %s recorded %.9g, replayed %.9g\n",
		l.Abs(), res.Tolerance, l.Tick, l.Field, l.Recorded, l.Replayed)
	fmt.Fprintln(stdout, "  float rounding: this CPU sums the policy's float32 products in another order than the recording's")
	return 0
}
