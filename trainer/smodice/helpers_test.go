package smodice

import (
	"context"
	"testing"

	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/prep/preptest"
	"github.com/dualforce/dualforce/trainer/run"
)

// testConfig is small enough for a run to take a second or two.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Disc.Hidden, cfg.Disc.Batch, cfg.Disc.LR = []int{64, 64}, 128, 1e-3
	cfg.DiscSteps = 400
	cfg.Value.Hidden, cfg.Policy.Hidden = []int{64, 64}, []int{64, 64}
	cfg.Value.Batch, cfg.Value.InitBatch, cfg.Value.ChunkRows, cfg.Policy.Batch = 256, 128, 4096, 256
	cfg.Value.LR, cfg.Policy.LR = 1e-3, 1e-3
	cfg.Run = run.Settings{Iterations: 400, CheckpointEvery: 100}
	return cfg
}

// prepared is the small synthetic task, prepared for training.
func prepared(t testing.TB, seed uint64) *prep.Data {
	t.Helper()
	return preparedSized(t, datafiletest.Small, seed)
}

func preparedSized(t testing.TB, sz datafiletest.Sizes, seed uint64) *prep.Data {
	t.Helper()
	return preptest.Synthetic(t, sz, seed, true)
}

func train(t testing.TB, d *prep.Data, cfg Config, dir string, resume bool) *Checkpoint {
	t.Helper()
	ck, err := Train(context.Background(), d, cfg, Options{Options: run.Options{Dir: dir, Resume: resume, Quiet: true}})
	if err != nil {
		t.Fatal(err)
	}
	return ck
}
