package smodice

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestExportRoundTrip: the exported bank, written and read back, runs the
// trained policy: on dataset observations built and normalised by the
// bank's own contract, skills.Policy's action equals the trainer's
// tanh(mean) within 1e-5.
func TestExportRoundTrip(t *testing.T) {
	d := prepared(t, 6)
	cfg := testConfig()
	cfg.DiscSteps, cfg.Run.Iterations = 100, 50
	dir := t.TempDir()
	ck := train(t, d, cfg, dir, false)
	bank, err := ck.Bank()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bank.npz")
	if err := skills.WriteBank(path, bank); err != nil {
		t.Fatal(err)
	}
	back, err := skills.ReadBank(path)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := back.ByName(ExpertLatentName)
	if err != nil {
		t.Fatal(err)
	}
	info := *lat.Info
	if back.LatentDim != 1 || len(back.Slots) != 1 || info.Iteration != 50 || info.SigmoidMu != 1 ||
		info.Phi != ck.Estimate.Constraint || len(info.OfflinePsi) != skills.NumJoints || back.Producer != Producer {
		t.Fatalf("bank metadata: latent dim %d, %d slots, info %+v", back.LatentDim, len(back.Slots), info)
	}
	if back.Contract.Layout.Name != skills.LayoutLocomotion48 || back.Contract.Kp != d.Contract.Kp {
		t.Fatalf("contract %+v", back.Contract)
	}
	policies, err := back.NewPolicies()
	if err != nil {
		t.Fatal(err)
	}
	sp := policies[lat.Slot]
	if err := sp.SetLatent(lat.Z); err != nil {
		t.Fatal(err)
	}

	// Raw observations from the dataset file, normalised by the bank.
	off, _ := datafiletest.Datasets(t, datafiletest.Small, 6)
	norm, err := skills.NewNormaliser(back.Contract.Normaliser)
	if err != nil {
		t.Fatal(err)
	}
	_, pi, err := ck.Policy()
	if err != nil {
		t.Fatal(err)
	}
	dim := d.Offline.ObsDim
	const rows = 200
	want := make([]float32, rows*skills.NumJoints)
	pi.Mode(&nn.Tape[float32]{}, d.Offline.Obs[:rows*dim], rows, want)
	obs, got := make([]float32, dim), make([]float32, skills.NumJoints)
	worst, worstNorm := 0.0, 0.0
	for r := range rows {
		copy(obs, off.Data.Obs[r*dim:(r+1)*dim])
		if err := norm.Apply(obs); err != nil {
			t.Fatal(err)
		}
		for j, v := range obs {
			worstNorm = max(worstNorm, math.Abs(float64(v-d.Offline.Obs[r*dim+j])))
		}
		if err := sp.Act(obs, got); err != nil {
			t.Fatal(err)
		}
		for j, g := range got {
			worst = max(worst, math.Abs(float64(g-want[r*skills.NumJoints+j])))
		}
	}
	t.Logf("bank vs trainer over %d observations: normalisation %.2e, action %.2e", rows, worstNorm, worst)
	if worstNorm > 1e-5 || worst > 1e-5 {
		t.Fatalf("bank differs from the trainer: normalisation %g, action %g", worstNorm, worst)
	}
}

// TestRecordGolden pins the metrics line format.
func TestRecordGolden(t *testing.T) {
	recs := []Record{
		{Iteration: 1, ValueLoss: -0.4125, PolicyLoss: 14.8, ESS: 828.25, MaxW: 3.5e-3, KL: 0.47, Constraint: 0.25,
			ExpertMass: 0.392, DiscAccuracy: 0.849, Seconds: 0.0021},
		{Iteration: 2, ValueLoss: metrics.Num(math.NaN()), PolicyLoss: metrics.Num(math.Inf(1)), ESS: 1, MaxW: 1, KL: 7.5,
			Constraint: -1e-9, ExpertMass: metrics.Num(math.NaN()), DiscAccuracy: metrics.Num(math.NaN()), Seconds: 12},
	}
	var buf bytes.Buffer
	for _, r := range recs {
		if err := json.NewEncoder(&buf).Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	golden := filepath.Join("testdata", "metrics.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("metrics lines:\n%s\nwant:\n%s", buf.Bytes(), want)
	}
}
