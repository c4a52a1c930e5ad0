package inspect

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// offline is a small valid archive: an expert and a random mode, two episodes each.
func offline(t *testing.T) *datafile.Offline {
	t.Helper()
	c, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	const n, d = 8, 48
	o := &datafile.Offline{
		Manifest: datafile.Manifest{
			FormatVersion: datafile.FormatVersion, Kind: datafile.KindOffline, Task: "locomotion", Contract: c,
			Transitions: n, ExpertTransitions: 4, Generator: []byte(`{"task":{"world":"obstacle"}}`),
			Modes: []datafile.Mode{{Name: "expert", Expert: true, Transitions: 4, Episodes: 2}, {Name: "random", Transitions: 4, Episodes: 2, Falls: 1}},
		},
		Data: dataset.Offline{
			ObsDim: d, ActDim: 12, Obs: make([]float32, n*d), Act: make([]float32, n*12), NextObs: make([]float32, n*d),
			Terminal: make([]bool, n), Timeout: make([]bool, n), EpisodeStart: make([]bool, n),
		},
		Withheld: datafile.Withheld{
			Reward: make([]float32, n), IsExpert: make([]bool, n), Mode: make([]int32, n),
			BasePosition: make([]float32, 3*n), BaseRPY: make([]float32, 3*n),
		},
	}
	for i := range n {
		o.Data.EpisodeStart[i] = i%2 == 0
		o.Data.Timeout[i] = i%2 == 1 && i != 7
		o.Withheld.IsExpert[i] = i < 4
		if i >= 4 {
			o.Withheld.Mode[i] = 1
		}
		o.Withheld.Reward[i] = float32(i) / 10
		o.Withheld.BasePosition[3*i] = float32(i) * 0.1
		o.Withheld.BasePosition[3*i+2] = 0.2 + 0.01*float32(i)
		o.Data.Obs[i*d+12] = float32(i) // joint_pos[0]
		o.Data.Act[i*12] = 1
	}
	o.Data.Terminal[7] = true
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSummary(t *testing.T) {
	s := Summarize(offline(t))
	if s.Episodes != 4 || s.Terminals != 1 || s.Timeouts != 3 || s.World != "obstacle" || s.SaturatedActions != 8 {
		t.Fatalf("summary %+v", s)
	}
	if m := s.Modes[1]; m.Name != "random" || m.MeanReward < 0.549 || m.MeanReward > 0.551 || m.MeanBaseHeight < 0.2549 || m.MeanBaseHeight > 0.2551 {
		t.Fatalf("random mode %+v", m)
	}
	// Episodes of the random mode: rewards 0.4+0.5 and 0.6+0.7.
	if m := s.Modes[1]; math.Abs(m.MeanReturn-1.1) > 1e-6 || math.Abs(m.StdReturn-math.Sqrt(0.08)) > 1e-6 {
		t.Fatalf("random mode episode return %v ± %v, want 1.1 ± %v", m.MeanReturn, m.StdReturn, math.Sqrt(0.08))
	}
	var jp Range
	for _, f := range s.Fields {
		if f.Name == skills.FieldJointPos {
			jp = f
		}
	}
	if jp.Dims != 12 || jp.Min != 0 || jp.Max != 7 || jp.WidestDim != 0 {
		t.Fatalf("joint_pos range %+v", jp)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 transitions (4 expert) in 4 episodes: 1 end in a fall", "NaN/Inf: none", "random", "joint_pos", "action entries at +-1: 8 of 96"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestWritePNG(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.png")
	if err := WritePNG(path, offline(t)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 2*b.Dy() || b.Dy() < 400 {
		t.Fatalf("image %v, want two square panels side by side", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries in the directory, want the PNG only", len(entries))
	}
	if err := WritePNG(filepath.Join(dir, "missing", "x.png"), offline(t)); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
