package fre

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestExperiment(t *testing.T) {
	if os.Getenv("FRE_EXPERIMENT") == "" {
		t.Skip("FRE_EXPERIMENT not set")
	}
	src := syntheticSource(3000, 1)
	cfg := testConfig()
	cfg.Steps, _ = strconv.Atoi(os.Getenv("FRE_STEPS"))
	if v := os.Getenv("FRE_KL"); v != "" {
		cfg.KLWeight, _ = strconv.ParseFloat(v, 64)
	}
	if v := os.Getenv("FRE_LR"); v != "" {
		cfg.LR, _ = strconv.ParseFloat(v, 64)
	}
	tr, err := NewTrainer(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ev := DefaultEvalConfig()
	ev.DualForm, ev.NewLinear, ev.NewMLP, ev.Identify = 64, 10, 4, 64
	start := time.Now()
	var sum Losses
	for i := range cfg.Steps {
		l := tr.Step()
		sum.Recon += l.Recon
		sum.KL += l.KL
		if (i+1)%250 == 0 {
			t.Logf("step %d: recon %.4f kl %.2f (%v)", i+1, sum.Recon/250, sum.KL/250, time.Since(start))
			sum = Losses{}
		}
		if (i+1)%1000 == 0 {
			rep := tr.Evaluate(ev)
			for _, s := range append(rep.Seen, rep.Unseen...) {
				t.Logf("  %-10s %3d: MSE %.4f R2 %.3f", s.Family, s.Rewards, s.MSE, s.R2)
			}
			t.Logf("  ident %.3f", rep.Identification)
		}
	}
}
