package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrOutput reports an output path a command cannot write; commands check their outputs before
// the work starts, so that minutes of collection or training are never lost at the write.
var ErrOutput = errors.New("cannot write output")

// outputFiles prepares the files a command will write: each one's directory is created if it
// does not exist, and must take a new file. A path that names a directory is refused.
func outputFiles(paths ...string) error {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return fmt.Errorf("%w: %s is a directory", ErrOutput, p)
		}
		if err := outputDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// outputDir prepares a directory a command will write into: created if it does not exist, and
// it must take a new file.
func outputDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	f, err := os.CreateTemp(dir, ".dualforce-write-check-*")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}
