package smodice

import (
	"context"
	"testing"

	"github.com/dualforce/dualforce/trainer/smodice/smodicetest"
)

// testConfig is small enough for a run to take a second or two.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Disc.Hidden, cfg.Disc.Batch, cfg.Disc.LR = []int{64, 64}, 128, 1e-3
	cfg.DiscSteps = 400
	cfg.DICE.ValueHidden, cfg.DICE.PolicyHidden = []int{64, 64}, []int{64, 64}
	cfg.DICE.Batch, cfg.DICE.InitBatch, cfg.DICE.ChunkRows = 256, 128, 4096
	cfg.DICE.ValueLR, cfg.DICE.PolicyLR = 1e-3, 1e-3
	cfg.Iterations, cfg.CheckpointEvery = 400, 100
	return cfg
}

// prepared is the small synthetic task, prepared for training.
func prepared(t testing.TB, seed uint64) *Data {
	t.Helper()
	return preparedSized(t, smodicetest.Small, seed)
}

func preparedSized(t testing.TB, sz smodicetest.Sizes, seed uint64) *Data {
	t.Helper()
	off, exp := smodicetest.Datasets(t, sz, seed)
	in, err := FromFiles("locomotion", off, exp)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func train(t testing.TB, d *Data, cfg Config, dir string, resume bool) *Checkpoint {
	t.Helper()
	ck, err := Train(context.Background(), d, cfg, Options{Dir: dir, Resume: resume, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return ck
}
