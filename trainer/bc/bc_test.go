package bc

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
)

func TestSelect(t *testing.T) {
	off, _ := datafiletest.Datasets(t, datafiletest.Small, 1)
	count := func(mode int32) int {
		n := 0
		for _, m := range off.Withheld.Mode {
			if m == mode {
				n++
			}
		}
		return n
	}
	tests := []struct {
		label, name string
		rows        int
		err         error
	}{
		{ExpertLabel, datafiletest.ExpertMode, count(0), nil},
		{datafiletest.ExpertMode, datafiletest.ExpertMode, count(0), nil},
		{datafiletest.DriftMode, datafiletest.DriftMode, count(2), nil},
		{"moonwalk", "", 0, ErrUnknownMode},
		{"", "", 0, ErrUnknownMode},
	}
	for _, tc := range tests {
		sel, err := Select(off, tc.label)
		if !errors.Is(err, tc.err) || sel.Label != tc.name || len(sel.Rows) != tc.rows {
			t.Errorf("Select(%q) = %q with %d rows, %v; want %q, %d, %v", tc.label, sel.Label, len(sel.Rows), err, tc.name, tc.rows, tc.err)
		}
	}
	// Two expert modes: "expert" keeps its own name.
	two := *off
	two.Manifest.Modes = append([]datafile.Mode(nil), off.Manifest.Modes...)
	two.Manifest.Modes[2].Expert = true
	if sel, err := Select(&two, ExpertLabel); err != nil || sel.Label != ExpertLabel || len(sel.Rows) != count(0)+count(2) {
		t.Errorf("two expert modes: %q, %d rows, %v", sel.Label, len(sel.Rows), err)
	}
}

// WithoutFalls drops exactly the rows of the behaviour's episodes that end in a fall, and
// refuses to leave nothing.
func TestWithoutFalls(t *testing.T) {
	src, _ := datafiletest.Datasets(t, datafiletest.Small, 1)
	off := *src
	d := &off.Data
	d.Terminal = make([]bool, d.Len())
	sel, err := Select(&off, ExpertLabel)
	if err != nil {
		t.Fatal(err)
	}
	// The selection's second episode ends in a fall.
	var starts []int
	for _, i := range sel.Rows {
		if d.EpisodeStart[i] {
			starts = append(starts, i)
		}
	}
	if len(starts) < 3 {
		t.Fatalf("the synthetic expert has %d episodes, want 3 or more", len(starts))
	}
	fallStart, fallEnd := starts[1], starts[2]
	d.Terminal[fallEnd-1] = true
	kept, dropped, err := sel.WithoutFalls(&off)
	if err != nil || dropped != 1 || kept.Label != sel.Label {
		t.Fatalf("WithoutFalls: %q, %d dropped, %v; want 1 dropped", kept.Label, dropped, err)
	}
	want := slices.DeleteFunc(slices.Clone(sel.Rows), func(i int) bool { return i >= fallStart && i < fallEnd })
	if !slices.Equal(kept.Rows, want) || len(want) == len(sel.Rows) {
		t.Fatalf("kept %d of %d rows, want %d (all but rows %d..%d)", len(kept.Rows), len(sel.Rows), len(want), fallStart, fallEnd-1)
	}
	for i := range d.Len() {
		d.Terminal[i] = i+1 == d.Len() || d.EpisodeStart[i+1]
	}
	if _, _, err := sel.WithoutFalls(&off); !errors.Is(err, ErrUnknownMode) {
		t.Fatalf("every episode falls: %v, want ErrUnknownMode", err)
	}
}

// smallExpert is the small synthetic task prepared for fitting, its offline file and the
// selection of its expert's transitions.
func smallExpert(t *testing.T) (*prep.Data, *datafile.Offline, Selection) {
	t.Helper()
	off, _ := datafiletest.Datasets(t, datafiletest.Small, 2)
	in, err := prep.FromFiles("", off, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := prep.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select(off, ExpertLabel)
	if err != nil {
		t.Fatal(err)
	}
	return d, off, sel
}

// TestFitClonesTheBehaviour fits the synthetic expert and checks the bank
// that comes out: named, tagged, and acting like the trainer's policy.
func TestFitClonesTheBehaviour(t *testing.T) {
	d, off, sel := smallExpert(t)
	cfg := DefaultConfig()
	cfg.Policy.Hidden, cfg.Policy.Batch, cfg.Steps, cfg.Policy.LR = []int{64, 64}, 256, 1500, 1e-3
	pi, rep, err := Fit(context.Background(), d, sel, cfg, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	meanAbs := 0.0
	for _, i := range sel.Rows {
		for _, a := range off.Data.Act[i*skills.NumJoints : (i+1)*skills.NumJoints] {
			meanAbs += math.Abs(float64(a))
		}
	}
	meanAbs /= float64(len(sel.Rows) * skills.NumJoints)
	t.Logf("%d transitions, final NLL %.3f, mean |mode - a| %.3f (mean |a| %.3f)", rep.Transitions, rep.FinalLoss, rep.MeanAbsError, meanAbs)
	if rep.Transitions != len(sel.Rows) || rep.MeanAbsError > 0.4*meanAbs {
		t.Errorf("fit does not follow the behaviour: %+v", rep)
	}

	head := &nn.SquashedGaussian[float32]{Net: pi.Net, ActDim: skills.NumJoints}
	bank, err := Bank(d, sel, pi)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bank.npz")
	if err := skills.WriteBank(path, bank); err != nil {
		t.Fatal(err)
	}
	back, err := skills.ReadBank(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := back.ByName(datafiletest.ExpertMode + " fit")
	if err != nil {
		t.Fatal(err)
	}
	if tagged := back.ByTags(Tag); len(tagged) != 1 || s.Info.SigmoidMu != 0 || back.Producer != Producer {
		t.Fatalf("bank metadata: %+v, producer %q", s.Info, back.Producer)
	}
	if want := math.Log(float64(d.Offline.Len()) / float64(len(sel.Rows))); math.Abs(s.Info.Phi-want) > 1e-12 {
		t.Errorf("phi %v, want %v", s.Info.Phi, want)
	}
	ps, err := back.NewPolicies()
	if err != nil {
		t.Fatal(err)
	}
	p := ps[s.Slot]
	if err := p.SetLatent(s.Z); err != nil {
		t.Fatal(err)
	}
	dim := d.Offline.ObsDim
	want := make([]float32, skills.NumJoints)
	got := make([]float32, skills.NumJoints)
	for _, i := range sel.Rows[:50] {
		obs := d.Offline.Obs[i*dim : (i+1)*dim]
		head.Mode(&nn.Tape[float32]{}, obs, 1, want)
		if err := p.Act(obs, got); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if math.Abs(float64(got[j]-want[j])) > 1e-5 {
				t.Fatalf("row %d: bank %v, trainer %v", i, got, want)
			}
		}
	}
}

func TestFitRefusesBadConfig(t *testing.T) {
	for name, damage := range map[string]func(*Config){
		"batch 0":       func(c *Config) { c.Policy.Batch = 0 },
		"rate 0":        func(c *Config) { c.Policy.LR = 0 },
		"a latent":      func(c *Config) { c.Policy.Latent = 8 },
		"steps below 0": func(c *Config) { c.Steps = -1 },
	} {
		cfg := DefaultConfig()
		damage(&cfg)
		if _, _, err := Fit(context.Background(), &prep.Data{}, Selection{}, cfg, nil, true); !errors.Is(err, ErrConfig) {
			t.Errorf("Fit with %s: %v", name, err)
		}
	}
}

// With Average set the fit returns the average of its iterates, not the last one: the same
// fit with and without averaging draws the same batches, so its networks differ only there.
func TestFitDeploysTheAverage(t *testing.T) {
	d, _, sel := smallExpert(t)
	cfg := DefaultConfig()
	cfg.Policy.Hidden, cfg.Policy.Batch, cfg.Steps = []int{16}, 64, 30
	last, _, err := Fit(context.Background(), d, sel, cfg, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := Fit(context.Background(), d, sel, cfg, nil, true)
	if err != nil || !slices.Equal(last.Params(), again.Params()) {
		t.Fatalf("two plain fits differ (%v): the comparison below means nothing", err)
	}
	cfg.Policy.Average = 0.9
	averaged, _, err := Fit(context.Background(), d, sel, cfg, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(last.Params(), averaged.Params()) {
		t.Fatal("the averaged fit returned the last iterate")
	}
}
