package smodice

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/run"
)

var (
	smallCheckpointOnce sync.Once
	smallCheckpoint     []byte
)

// checkpointBytes is a real checkpoint file of a tiny run.
func checkpointBytes(t testing.TB) []byte {
	smallCheckpointOnce.Do(func() {
		d := prepared(t, 11)
		cfg := testConfig()
		cfg.DiscSteps, cfg.Run.Iterations = 5, 3
		cfg.Disc.Hidden, cfg.Value.Hidden, cfg.Policy.Hidden = []int{4, 4}, []int{4}, []int{4}
		dir := t.TempDir()
		train(t, d, cfg, dir, false)
		b, err := os.ReadFile(filepath.Join(dir, run.CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		smallCheckpoint = b
	})
	return smallCheckpoint
}

func decode(b []byte) (*Checkpoint, error) {
	f, err := checkpoint.Decode(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	return FromFile(f)
}

// members returns the archive's members in order.
func members(t testing.TB, b []byte) (names []string, data [][]byte) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(rc)
		rc.Close()
		names, data = append(names, f.Name), append(data, buf.Bytes())
	}
	return names, data
}

// rezip builds an archive of the members with correct CRCs.
func rezip(names []string, data [][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, n := range names {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		_, _ = w.Write(data[i])
	}
	_ = zw.Close()
	return buf.Bytes()
}

// withManifest replaces the manifest member of the archive good.
func withManifest(t testing.TB, good []byte, edit func(string) string) []byte {
	names, data := members(t, good)
	for i, n := range names {
		if n == checkpoint.ManifestMember {
			data[i] = []byte(edit(string(data[i])))
		}
	}
	return rezip(names, data)
}

func TestCheckpointRejectsDamage(t *testing.T) {
	good := checkpointBytes(t)
	if _, err := decode(good); err != nil {
		t.Fatalf("good checkpoint: %v", err)
	}
	names, data := members(t, good)
	drop := func(name string) []byte {
		var n2 []string
		var d2 [][]byte
		for i, n := range names {
			if n != name {
				n2, d2 = append(n2, n), append(d2, data[i])
			}
		}
		return rezip(n2, d2)
	}
	replace := func(old, new string) []byte {
		return withManifest(t, good, func(m string) string { return strings.Replace(m, old, new, 1) })
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other file", []byte("PK\x03\x04 a zip")},
		{"truncated", good[:len(good)/2]},
		{"one byte short", good[:len(good)-1]},
		{"flipped bit", flip(good, len(good)/3)},
		{"missing array", drop("psi.npy")},
		{"missing manifest", drop(checkpoint.ManifestMember)},
		{"another algorithm", replace(`"algorithm": "smodice"`, `"algorithm": "dualforce"`)},
		{"unknown state field", replace(`"rng"`, `"rgn"`)},
		{"a latent for SMODICE", replace(`"latent": 0`, `"latent": 1`)},
		{"array listed longer than stored", replace(`"name": "psi",
   "dtype": "<f4",
   "len": 12`, `"name": "psi",
   "dtype": "<f4",
   "len": 13`)},
		{"iteration past the run", replace(`"iteration": 3`, `"iteration": 4`)},
		{"other task", replace(`"task": "locomotion"`, `"task": "navigation"`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Equal(tc.b, good) {
				t.Fatal("the edit changed nothing")
			}
			_, err := decode(tc.b)
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("decode = %v, want ErrCheckpoint", err)
			}
			t.Logf("%v", err)
		})
	}
	path := filepath.Join(t.TempDir(), run.CheckpointFile)
	if err := os.WriteFile(path, good[:100], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); !errors.Is(err, ErrCheckpoint) {
		t.Fatalf("Read of a torn file = %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x10
	return c
}

// FuzzDecodeCheckpoint: any manifest gives a checkpoint that passed every
// check (and rebuilds its policy and bank without panicking) or an
// ErrCheckpoint, never a panic. The manifest is re-zipped with a correct
// CRC so the fuzzer reaches the checks behind the archive's checksums.
func FuzzDecodeCheckpoint(f *testing.F) {
	good := checkpointBytes(f)
	names, data := members(f, good)
	for i, n := range names {
		if n == checkpoint.ManifestMember {
			f.Add(data[i])
			f.Add(data[i][:len(data[i])/2])
			f.Add(bytes.Replace(data[i], []byte(`"len": 12`), []byte(`"len": 99999999`), 1))
		}
	}
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		ck, err := decode(withManifest(t, good, func(string) string { return string(manifest) }))
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		if _, _, err := ck.Policy(); err != nil {
			return
		}
		_, _ = ck.Bank()
	})
}
