package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

func sample(t testing.TB) *File {
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	f := &File{
		Algorithm: "smodice", Task: "locomotion", Contract: c, Iteration: 7,
		Config: []byte(`{"a": 1}`), State: []byte(`{"rng": "AQID"}`),
		Float32: map[string][]float32{"policy": {1, 2, 3}, "psi": make([]float32, 12)},
		Float64: map[string][]float64{"weights": {0.25, 0.75, math.SmallestNonzeroFloat64}},
	}
	f.Digest[3] = 9
	return f
}

func encode(t testing.TB, f *File) []byte {
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	f := sample(t)
	path := filepath.Join(t.TempDir(), "checkpoint.npz")
	if err := Write(path, f); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Algorithm != f.Algorithm || back.Digest != f.Digest || back.Iteration != 7 || compact(back.State) != compact(f.State) ||
		!slices.Equal(back.Float32["policy"], f.Float32["policy"]) || !slices.Equal(back.Float64["weights"], f.Float64["weights"]) {
		t.Fatalf("round trip: %+v", back)
	}
	if _, err := back.Float32Array("policy", 4); !errors.Is(err, ErrArray) {
		t.Errorf("a 3-value array asked for as 4: %v", err)
	}
	if x, err := back.Float32Array("psi", 12); err != nil || len(x) != 12 {
		t.Errorf("psi: %v", err)
	}
	if !bytes.Equal(encode(t, f), encode(t, back)) {
		t.Error("re-encoding the read checkpoint changes its bytes")
	}
}

func TestRefusesBadCheckpoints(t *testing.T) {
	good := encode(t, sample(t))
	tests := []struct {
		name string
		edit func(f *File)
		b    []byte
	}{
		{name: "empty", b: []byte{}},
		{name: "truncated", b: good[:len(good)-10]},
		{name: "bad algorithm name", edit: func(f *File) { f.Algorithm = "../x" }},
		{name: "unknown task", edit: func(f *File) { f.Task = "swimming" }},
		{name: "task of another layout", edit: func(f *File) { f.Task = "navigation" }},
		{name: "negative iteration", edit: func(f *File) { f.Iteration = -1 }},
		{name: "config not JSON", edit: func(f *File) { f.Config = []byte("{") }},
		{name: "array name", edit: func(f *File) { f.Float32["Policy/x"] = nil }},
		{name: "name in both dtypes", edit: func(f *File) { f.Float64["policy"] = []float64{1} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			if tc.edit != nil {
				f := sample(t)
				tc.edit(f)
				var buf bytes.Buffer
				if err := Encode(&buf, f); !errors.Is(err, ErrCheckpoint) {
					t.Fatalf("Encode = %v, want ErrCheckpoint", err)
				}
				return
			}
			_, err := Decode(bytes.NewReader(b), int64(len(b)))
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("Decode = %v, want ErrCheckpoint", err)
			}
			t.Log(err)
		})
	}
}

// FuzzDecode: any bytes give a checkpoint that passed validation or an
// ErrCheckpoint, never a panic.
func FuzzDecode(f *testing.F) {
	good := encode(f, sample(f))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(strings.Replace(string(good), `"len": 3`, `"len": 4`, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ck, err := Decode(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			return
		}
		if _, err := ck.manifest(); err != nil {
			t.Fatalf("decoded an invalid checkpoint: %v", err)
		}
	})
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "invalid: " + err.Error()
	}
	return buf.String()
}
