package smodice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"
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
		cfg.DiscSteps, cfg.Iterations = 5, 3
		cfg.Disc.Hidden, cfg.DICE.ValueHidden, cfg.DICE.PolicyHidden = []int{4, 4}, []int{4}, []int{4}
		dir := t.TempDir()
		train(t, d, cfg, dir, false)
		b, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		smallCheckpoint = b
	})
	return smallCheckpoint
}

func TestCheckpointRejectsDamage(t *testing.T) {
	good := checkpointBytes(t)
	if _, err := DecodeCheckpoint(good); err != nil {
		t.Fatalf("good checkpoint: %v", err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other file", []byte("PK\x03\x04 a zip")},
		{"magic only", checkpointMagic},
		{"truncated", good[:len(good)/2]},
		{"one byte short", good[:len(good)-1]},
		{"flipped bit", flip(good, len(good)/3)},
		{"flipped checksum", flip(good, len(good)-2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCheckpoint(tc.b)
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("DecodeCheckpoint = %v, want ErrCheckpoint", err)
			}
			t.Logf("%v", err)
		})
	}
	path := filepath.Join(t.TempDir(), CheckpointFile)
	if err := os.WriteFile(path, good[:100], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(path); !errors.Is(err, ErrCheckpoint) {
		t.Fatalf("ReadCheckpoint of a torn file = %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x10
	return c
}

// FuzzDecodeCheckpoint: any bytes give a checkpoint that passed validation
// or an ErrCheckpoint, never a panic. Mutations past the checksum are
// rare, so the checksum is recomputed for half of the inputs to reach the
// decoder and the validation.
func FuzzDecodeCheckpoint(f *testing.F) {
	good := checkpointBytes(f)
	f.Add(good, false)
	f.Add(good[:len(good)-4], true)
	f.Add([]byte{}, false)
	f.Add(append(append([]byte(nil), checkpointMagic...), 1, 2, 3, 4, 5), true)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = withChecksum(b)
		}
		ck, err := DecodeCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		if _, err := ck.Policy(); err != nil {
			return
		}
		_, _ = ck.Bank()
	})
}

// withChecksum treats b (after the magic, which it adds if missing) as a
// gob body and appends its checksum.
func withChecksum(b []byte) []byte {
	body := bytes.TrimPrefix(b, checkpointMagic)
	out := append(append([]byte(nil), checkpointMagic...), body...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(body, crcTable))
}
