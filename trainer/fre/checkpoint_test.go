package fre

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// validCheckpoint is the bytes of a small real checkpoint.
func validCheckpoint(t testing.TB) []byte {
	t.Helper()
	tr, err := NewTrainer(syntheticSource(600, 2), tinyRunConfig())
	if err != nil {
		t.Fatal(err)
	}
	tr.Step()
	path := filepath.Join(t.TempDir(), CheckpointFile)
	if err := WriteCheckpoint(path, &Checkpoint{Config: tr.Config(), State: tr.State()}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeCheckpointRefusesMalformed(t *testing.T) {
	good := validCheckpoint(t)
	if _, err := DecodeCheckpoint(good); err != nil {
		t.Fatalf("valid checkpoint refused: %v", err)
	}
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x40
		return b
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other magic", append([]byte("dualforce-smodice-checkpoint\n"), good[len(checkpointMagic):]...)},
		{"magic only", good[:len(checkpointMagic)]},
		{"truncated", good[:len(good)-9]},
		{"flipped header byte", flip(len(checkpointMagic) + 10)},
		{"flipped array byte", flip(len(good) - 20)},
		{"flipped checksum", flip(len(good) - 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeCheckpoint(tc.b); !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("got %v, want ErrCheckpoint", err)
			}
		})
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	good := validCheckpoint(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("dualforce-fre-checkpoint\n\x05\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ck, err := DecodeCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		if len(ck.State.Params) == 0 || len(ck.State.Adam.M) != len(ck.State.Params) {
			t.Fatalf("accepted checkpoint with %d params and %d moments", len(ck.State.Params), len(ck.State.Adam.M))
		}
	})
}
