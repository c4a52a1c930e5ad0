package fre

import (
	"errors"
	"testing"

	"github.com/dualforce/dualforce/trainer/checkpoint"
)

// A checkpoint that the file format accepts but that does not fit the
// trainer is refused with ErrCheckpoint, and leaves the trainer as it was.
func TestRestoreRefusesMisfits(t *testing.T) {
	src := syntheticSource(600, 2)
	tr := mustTrainer(t, src, tinyRunConfig())
	tr.Step()
	good, err := tr.file()
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *Trainer { return mustTrainer(t, src, tinyRunConfig()) }
	if err := fresh().restoreFile(good); err != nil {
		t.Fatalf("own checkpoint refused: %v", err)
	}
	tests := []struct {
		name string
		edit func(f *checkpoint.File)
	}{
		{"short params", func(f *checkpoint.File) { f.Float32[paramsArray] = f.Float32[paramsArray][1:] }},
		{"missing moments", func(f *checkpoint.File) { delete(f.Float32, adamVArray) }},
		{"extra array", func(f *checkpoint.File) { f.Float32["psi"] = []float32{1} }},
		{"float64 array", func(f *checkpoint.File) { f.Float64 = map[string][]float64{"x": {1}} }},
		{"state not JSON", func(f *checkpoint.File) { f.State = []byte("{") }},
		{"unknown state field", func(f *checkpoint.File) { f.State = []byte(`{"rng":null,"adam_steps":1,"x":2}`) }},
		{"steps disagree", func(f *checkpoint.File) { f.Iteration = 5 }},
		{"bad generator", func(f *checkpoint.File) { f.State = []byte(`{"rng":"AAAA","adam_steps":1}`) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := tr.file()
			tc.edit(f)
			target := fresh()
			before := append([]float32(nil), target.model.Arena.Params()...)
			err := target.restoreFile(f)
			if !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("got %v, want ErrCheckpoint", err)
			}
			for i, v := range target.model.Arena.Params() {
				if v != before[i] {
					t.Fatal("a refused checkpoint changed the parameters")
				}
			}
		})
	}
}
