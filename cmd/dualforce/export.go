package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	trainrun "github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/smodice"
)

func init() {
	register(command{name: "export", summary: "write the skill bank of a training checkpoint", run: runExport})
}

const exportUsage = `Usage: dualforce export --checkpoint DIR|FILE --out bank.npz

Exports the policy of a 'dualforce train smodice' checkpoint (a run directory or its
checkpoint.npz) as a skill bank: the full contract (layout, normaliser, action scale, default
pose, gains, rates, feature projection with its statistics) and one latent, "smodice-expert".
The checkpoint may be of an unfinished run.
`

func runExport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", exportUsage, stderr)
	ckPath := fs.String("checkpoint", "", "run directory or checkpoint file (required)")
	out := fs.String("out", "", "bank to write (required)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *ckPath == "" || *out == "" {
		return usagef("--checkpoint and --out are required")
	}
	if err := checkOutputFiles(*out); err != nil {
		return err
	}
	if st, err := os.Stat(*ckPath); err == nil && st.IsDir() {
		*ckPath = filepath.Join(*ckPath, trainrun.CheckpointFile)
	}
	ck, err := smodice.Read(*ckPath)
	if err != nil {
		return err
	}
	return exportBank(stdout, ck, *out)
}
