package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/inspect"
)

func init() {
	register(command{name: "dataset", summary: "work with dataset archives (inspect)", run: runDataset})
}

const datasetUsage = `Usage: dualforce dataset <subcommand> [flags] [arguments]

Subcommands:
  inspect <file>   check a dataset archive and summarise it
`

func runDataset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, datasetUsage)
		return usagef("missing subcommand")
	}
	switch args[0] {
	case "inspect":
		return runInspect(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, datasetUsage)
		return nil
	}
	return usagef("unknown dataset subcommand %q", args[0])
}

const inspectUsage = `Usage: dualforce dataset inspect [flags] <file>

Reads a dataset archive written by 'dualforce collect', checking everything the trainer relies on
(zip checksums, array types and shapes, the manifest's counts, no NaN or Inf anywhere, actions
in [-1,1], episode markers), and prints:

  for an offline archive: counts per mode (transitions, episodes, falls, goals reached, mean
  reward and base height), episode outcomes, and the range of every observation field and of
  the actions; it also writes a PNG with each mode's base height histogram and top-down traces
  of its first episodes;
  for an expert archive: its size and observation ranges.

A file that fails a check is reported with the reason and exit status 1.
`

func runInspect(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dataset inspect", inspectUsage, stderr)
	png := fs.String("png", "", "summary figure to write (default <file>_summary.png; offline archives only)")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	path := fs.Arg(0)
	m, err := datafile.ReadManifest(path)
	if err != nil {
		return err
	}
	if m.Kind == datafile.KindExpert {
		e, err := datafile.ReadExpert(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: expert archive, format v%d, task %s, layout %s: %d states\nNaN/Inf: none (every column checked on read)\n\n",
			path, m.FormatVersion, m.Task, m.Contract.Layout.Name, e.Data.Len())
		return inspect.WriteRanges(stdout, inspect.FieldRanges(m.Contract.Layout, e.Data.Obs))
	}
	if *png == "" {
		*png = strings.TrimSuffix(path, ".npz") + "_summary.png"
	}
	if err := checkOutputFiles(*png); err != nil {
		return err
	}
	o, err := datafile.ReadOffline(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: offline archive, format v%d, seed %d\n", path, m.FormatVersion, m.Seed)
	if err := inspect.Summarize(o).WriteText(stdout); err != nil {
		return err
	}
	if err := createParents(*png); err != nil {
		return err
	}
	if err := inspect.WritePNG(*png, o); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", *png)
	return nil
}
