package dualforce

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// TestToyMetricsLogAndPlots writes a toy run's records to a metrics log,
// reads the columns back and draws the figures.
func TestToyMetricsLogAndPlots(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "metrics.jsonl")
	mlog, err := metrics.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	tb := newToy(rand.New(rand.NewPCG(15, 1)), 2000)
	run := newToyRun(t, tb)
	var last Metrics
	for range 5 {
		if last, err = run.loop.Iterate(); err != nil {
			t.Fatal(err)
		}
		if err := mlog.Write(last.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := mlog.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := metrics.ReadSeries(logPath, skillset.SkillKey("phi", 2), skillset.SkillKey("nearest", 0), KeyObjective, skillset.SkillKey("sigma", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Iteration) != 5 || s.Iteration[4] != 5 {
		t.Fatalf("iterations %v, want 1..5", s.Iteration)
	}
	for key, want := range map[string]float64{
		skillset.SkillKey("phi", 2): last.Constraint[2], skillset.SkillKey("nearest", 0): float64(last.Nearest[0]),
		KeyObjective: last.Objective, skillset.SkillKey("sigma", 1): last.Sigma[1],
	} {
		if got := s.Values[key][4]; got != want || math.IsNaN(got) {
			t.Errorf("%s read back as %g, want %g", key, got, want)
		}
	}
	if err := WritePlots(logPath, dir, 3, toyEps, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, BehavioursPlot)); !os.IsNotExist(err) {
		t.Errorf("%s drawn for a set without behaviour labels: %v", BehavioursPlot, err)
	}
	for _, name := range []string{TrainingPlot, WeightsPlot} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
	}
}
