package main

import (
	"errors"
	"fmt"

	trainrun "github.com/dualforce/dualforce/trainer/run"
)

// explainRunExists tells the user what to do about a run directory that
// already holds a run: continue it with --resume, or choose another --out.
func explainRunExists(err error) error {
	if errors.Is(err, trainrun.ErrRunExists) {
		return fmt.Errorf("%w (pass --resume to continue that run, or choose another --out)", err)
	}
	return err
}
