package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// counter is a loop whose state is one number.
type counter struct {
	id     Identity
	c      skills.Contract
	it     int
	plots  int
	cancel func(it int)
}

type record struct {
	Iteration int         `json:"iteration"`
	Value     metrics.Num `json:"value"`
}

func (c *counter) Iterate(context.Context) (record, error) {
	c.it++
	if c.cancel != nil {
		c.cancel(c.it)
	}
	return record{Iteration: c.it, Value: metrics.Num(c.it * c.it)}, nil
}

func (c *counter) Describe(r record) string { return "" }

func (c *counter) Checkpoint() (*checkpoint.File, error) {
	saved, _ := json.Marshal(SavedConfig{Settings: Settings{Iterations: 10, CheckpointEvery: 3}, Config: c.id.Config})
	return &checkpoint.File{
		Algorithm: c.id.Algorithm, Task: c.id.Task, Digest: c.id.Digest, Contract: c.c, Iteration: c.it,
		Config: saved, State: []byte("{}"),
	}, nil
}

func (c *counter) Plot(string) error { c.plots++; return nil }

func TestDriveSavesResumesAndRefuses(t *testing.T) {
	ct, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Algorithm: "counter", Task: "locomotion", Config: []byte(`{"lr": 1}`)}
	settings := Settings{Iterations: 10, CheckpointEvery: 3}
	dir := t.TempDir()
	opt := Options{Dir: dir, Quiet: true}

	// A fresh run cancelled after iteration 5 saves iteration 5.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file, err := Open(opt, id, settings)
	if err != nil || file != nil {
		t.Fatalf("fresh Open = %v, %v", file, err)
	}
	loop := &counter{id: id, c: ct, cancel: func(it int) {
		if it == 5 {
			cancel()
		}
	}}
	if err := Drive(ctx, Loop[record](loop), "count", settings, 0, true, opt, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Drive = %v", err)
	}
	// Without Resume the directory is refused; with it, iteration 5 comes back.
	if _, err := Open(opt, id, settings); !errors.Is(err, ErrRunExists) {
		t.Fatalf("Open without resume = %v", err)
	}
	opt.Resume = true
	file, err = Open(opt, id, settings)
	if err != nil || file.Iteration != 5 {
		t.Fatalf("resume Open = %+v, %v", file, err)
	}
	loop = &counter{id: id, c: ct, it: file.Iteration}
	var seen []int
	if err := Drive(context.Background(), Loop[record](loop), "count", settings, 5, false, opt, func(r record) { seen = append(seen, r.Iteration) }); err != nil {
		t.Fatal(err)
	}
	s, err := metrics.ReadSeries(filepath.Join(dir, MetricsFile), "value")
	if err != nil || len(s.Iteration) != 10 || s.Values["value"][9] != 100 || len(seen) != 5 || loop.plots == 0 {
		t.Fatalf("metrics after resume: %v, %v; observed %v, %d plots", s.Iteration, err, seen, loop.plots)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		id       Identity
		settings Settings
	}{
		{"other algorithm", Identity{Algorithm: "other", Task: id.Task, Config: id.Config}, settings},
		{"other data", Identity{Algorithm: id.Algorithm, Task: id.Task, Config: id.Config, Digest: [32]byte{1}}, settings},
		{"other config", Identity{Algorithm: id.Algorithm, Task: id.Task, Config: []byte(`{"lr": 2}`)}, settings},
		{"past the end", id, Settings{Iterations: 9, CheckpointEvery: 3}},
	} {
		if _, err := Open(opt, tc.id, tc.settings); !errors.Is(err, ErrResumeMismatch) {
			t.Errorf("%s: Open = %v, want ErrResumeMismatch", tc.name, err)
		}
	}
	if _, err := Open(opt, id, Settings{Iterations: 10, CheckpointEvery: 0}); !errors.Is(err, ErrSettings) {
		t.Errorf("checkpoint period 0: %v", err)
	}
}
