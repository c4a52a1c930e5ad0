package disc

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/run"
)

func prepared(t *testing.T, seed uint64, withExpert bool) *prep.Data {
	t.Helper()
	return preptest.Synthetic(t, datafiletest.Small, seed, withExpert)
}

// writeRun writes a run directory whose checkpoint holds reward for d.
func writeRun(t *testing.T, d *prep.Data, edit func(*checkpoint.File)) string {
	t.Helper()
	r := make([]float32, d.Offline.Len())
	for i := range r {
		r[i] = float32(i%7) - 3
	}
	f := &checkpoint.File{Algorithm: "smodice", Task: d.Task, Digest: d.Digest, Contract: d.Contract,
		Config: []byte("{}"), State: []byte("{}"), Float32: map[string][]float32{RewardArray: r}}
	if edit != nil {
		edit(f)
	}
	dir := t.TempDir()
	if err := checkpoint.Write(filepath.Join(dir, run.CheckpointFile), f); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadReward: the reward of the run's own offline set is read, with or
// without the expert set in the prepared data; a run of another dataset,
// a reward holding NaN and a checkpoint without a reward
// are refused.
func TestReadReward(t *testing.T) {
	d := prepared(t, 1, true)
	own := writeRun(t, d, nil)
	for name, path := range map[string]string{"directory": own, "file": filepath.Join(own, run.CheckpointFile)} {
		if r, err := ReadReward(path, prepared(t, 1, false)); err != nil || len(r) != d.Offline.Len() {
			t.Errorf("%s: %d rewards, %v", name, len(r), err)
		}
	}
	for _, c := range []struct {
		name string
		dir  string
		data *prep.Data
		want error
	}{
		{"other dataset", own, prepared(t, 2, false), ErrOtherData},
		{"NaN", writeRun(t, d, func(f *checkpoint.File) { f.Float32[RewardArray][3] = float32(math.NaN()) }), d, checkpoint.ErrCheckpoint},
		{"no reward", writeRun(t, d, func(f *checkpoint.File) { f.Float32 = map[string][]float32{"x": {1}} }), d, checkpoint.ErrArray},
	} {
		if _, err := ReadReward(c.dir, c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}
