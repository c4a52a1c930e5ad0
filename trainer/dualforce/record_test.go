package dualforce

import (
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// TestMostWeighedKeepsTheHighestPeaks: a skill's panel draws the
// plottedBehaviours behaviours whose mass peaked highest, highest first,
// judged on that skill's masses alone, and every behaviour when there are
// fewer.
func TestMostWeighedKeepsTheHighestPeaks(t *testing.T) {
	behaviours := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	// Skill 1's peaks: h 0.9, a 0.8, c 0.7, f 0.6, b 0.5, g 0.4, d 0.3, e 0.2;
	// skill 0's the other way round.
	peaks := map[string]float64{"h": 0.9, "a": 0.8, "c": 0.7, "f": 0.6, "b": 0.5, "g": 0.4, "d": 0.3, "e": 0.2}
	s := metrics.Series{Iteration: []float64{1, 2, 3}, Values: map[string][]float64{}}
	for _, b := range behaviours {
		p := peaks[b]
		s.Values[BehaviourMassKey(b, 1)] = []float64{p / 2, p, p / 3} // peak mid-run
		s.Values[BehaviourMassKey(b, 0)] = []float64{1 - p, 0, 0}
	}
	var got []string
	for _, l := range mostWeighed(s, 1, behaviours) {
		got = append(got, l.Name)
	}
	if want := []string{"h", "a", "c", "f", "b", "g"}; !slices.Equal(got, want) {
		t.Errorf("skill 1 draws %v, want %v", got, want)
	}
	if few := mostWeighed(s, 1, behaviours[:3]); len(few) != 3 || few[0].Name != "a" {
		t.Errorf("of three behaviours, drew %d starting with %q; want all 3, a first", len(few), few[0].Name)
	}
}
