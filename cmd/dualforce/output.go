package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dualforce/dualforce/skills"
)

// ErrOutput reports an output path a command cannot write. Commands check their outputs before
// the work starts (checkOutputFiles, checkOutputDir), so that minutes of collection or training
// are never lost at the write, and create the missing directories only when they write
// (createParents), so that a command refused for its input leaves nothing behind.
var ErrOutput = errors.New("cannot write output")

// checkOutputFiles refuses a file path that names a directory, or whose directory could not be
// created or written.
func checkOutputFiles(paths ...string) error {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return fmt.Errorf("%w: %s is a directory", ErrOutput, p)
		}
		if err := checkOutputDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// checkOutputDir refuses a directory that could not be created or written: its nearest existing
// ancestor must be a directory that takes a new file.
func checkOutputDir(dir string) error {
	existing := filepath.Clean(dir)
	for {
		st, err := os.Stat(existing)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%w: %s: %s is not a directory", ErrOutput, dir, existing)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
		existing = parent
	}
	f, err := os.CreateTemp(existing, ".dualforce-write-check-*")
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrOutput, dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%w: %w", ErrOutput, err)
	}
	return nil
}

// createParents creates the directories of files about to be written.
func createParents(paths ...string) error {
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("%w: %w", ErrOutput, err)
		}
	}
	return nil
}

// saveBank creates the directories of path and writes b there atomically.
func saveBank(path string, b *skills.Bank) error {
	if err := createParents(path); err != nil {
		return err
	}
	return skills.WriteBank(path, b)
}
