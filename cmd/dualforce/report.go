package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/dualforce/dualforce/trainer/report"
)

func init() {
	register(command{name: "report", summary: "one self-contained HTML page on trained and evaluated runs", run: runReport})
}

const reportUsage = `Usage: dualforce report [--out report.html] RUN...

Writes one HTML page about the run directories given (a training run directory with its
evaluation: eval.json there or in its eval/ subdirectory, as 'dualforce eval --out RUN/eval'
writes it, and any metrics.jsonl or checks.jsonl in it or one level below). Every figure is embedded in the
page: it opens from disk, with no server and nothing fetched.

Per run: the task returns and the filter against the SMODICE-expert; the heat map of pairwise
online successor-feature distances (the SMODICE-expert as row 1, then the latents that pass
the filter); a PCA projection of the same SFs; top-down base paths per skill coloured by base
height; every numeric column of the metrics logs; and the fence robustness table (goal rate per
world) when the evaluation ran in fenced worlds. Across runs (e.g. Dual-Force and DOI): the
distinct behaviour modes among passing latents, the mean minimum SF distance, the share
passing the filter and the returns, side by side.
`

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, stderr)
	out := fs.String("out", "report.html", "the page to write")
	if err := parseFlags(fs, args, oneOrMore); err != nil {
		return err
	}
	runs := make([]*report.Run, fs.NArg())
	for i, dir := range fs.Args() {
		run, err := report.Load(dir)
		if err != nil {
			return err
		}
		runs[i] = run
	}
	if err := report.WriteFile(*out, runs); err != nil {
		return err
	}
	abs, err := filepath.Abs(*out)
	if err != nil {
		abs = *out
	}
	fmt.Fprintf(stdout, "wrote %s (%d runs); open file://%s\n", *out, len(runs), abs)
	return nil
}
