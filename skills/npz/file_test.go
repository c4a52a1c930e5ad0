package npz

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npz")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	errBad := errors.New("bad archive")
	size := func(r io.ReaderAt, n int64) (int64, error) { return n, nil }
	fail := func(io.ReaderAt, int64) (int64, error) { return 0, errBad }
	for _, tc := range []struct {
		name    string
		path    string
		decode  func(io.ReaderAt, int64) (int64, error)
		want    int64
		wantErr error
	}{
		{"decodes the whole file", path, size, 5, nil},
		{"missing file", filepath.Join(dir, "none.npz"), size, 0, fs.ErrNotExist},
		{"decode error", path, fail, 0, errBad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeFile(tc.path, tc.decode)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Fatalf("DecodeFile = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name %s", err, tc.path)
			}
		})
	}
}
