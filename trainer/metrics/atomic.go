package metrics

import (
	"io"

	"github.com/dualforce/dualforce/skills"
)

// WriteFile replaces path atomically with what write produces (skills.WriteFileAtomic).
func WriteFile(path string, write func(io.Writer) error) error {
	return skills.WriteFileAtomic(path, 0o644, write)
}
