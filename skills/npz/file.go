package npz

import (
	"fmt"
	"io"
	"os"
)

// DecodeFile opens the file at path and decodes it with decode, which reads its size bytes
// through r: the one way banks, datasets and checkpoints are read from disk. An error opening
// the file is the os package's (it names the path); decode's error comes back wrapped with
// the path.
func DecodeFile[T any](path string, decode func(r io.ReaderAt, size int64) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return zero, err
	}
	v, err := decode(f, st.Size())
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
