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
first starting at power-on (skillrt writes them as flight-<time>-<seq>.mcap). Exit status 0:
identical; 1: the first divergence is printed (tick, field, both values); 2: bad arguments.

Flags:
`

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("skillrt replay", replayHelp, stderr)
	bank := fs.String("bank", "", "replay with this bank instead of the one the recording names")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	res, err := replay.Run(fs.Args(), replay.Options{Bank: *bank})
	if err != nil {
		fmt.Fprintf(stderr, "skillrt replay: after %d ticks: %v\n", res.Ticks, err)
		return 1
	}
	if d := res.Divergence; d != nil {
		fmt.Fprintf(stdout, "diverged at tick %d: %s (byte %d)\n", d.Tick, d.Field, d.Offset)
		fmt.Fprintf(stdout, "  recorded: %+v\n  replayed: %+v\n", d.Recorded.Drivers, d.Replayed.Drivers)
		return 1
	}
	fmt.Fprintf(stdout, "replayed %d ticks: %d commands identical byte for byte\n", res.Ticks, res.Compared)
	return 0
}
