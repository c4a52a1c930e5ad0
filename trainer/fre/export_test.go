package fre

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
)

// TestSkillsEncoderMatchesTrainer: the bank's encoder (skills, pure Go
// float32, the code the robot runs) computes from the exported arrays the
// trainer's posterior mean within 1e-5, on the default architecture, for
// rewards of every family given unnormalised (the encoder applies the
// exported reward scale).
func TestSkillsEncoderMatchesTrainer(t *testing.T) {
	src := syntheticSource(2000, 5)
	cfg := DefaultConfig()
	cfg.Batch = 8
	tr := mustTrainer(t, src, cfg)
	rng := rand.New(rand.NewPCG(3, 3))
	for i, p := range tr.Model().Arena.Params() { // away from the init's identities
		tr.Model().Arena.Params()[i] = p + 0.05*float32(rng.NormFloat64())
	}
	fre := tr.Export()
	for name := range fre.Net.Arrays {
		if name[:4] != "fre/" {
			t.Errorf("exported a trainer-only array %q", name)
		}
	}
	if n := fre.Anchors.Shape; len(n) != 2 || n[0] != cfg.Anchors || n[1] != src.Dim || fre.Subsets != cfg.Anchors/cfg.Tokens {
		t.Fatalf("anchors %v in %d subsets", n, fre.Subsets)
	}
	enc, plan, err := fre.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	if plan.T != cfg.Tokens {
		t.Fatalf("subsets of %d anchors, trained on sets of %d", plan.T, cfg.Tokens)
	}
	d, tokens := src.Dim, cfg.Tokens
	one, err := skills.BlockPlan(tokens, 1)
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float32, cfg.Arch.Latent)
	worst := 0.0
	for range 40 {
		states, raw, bins := make([]float32, tokens*d), make([]float32, tokens), make([]int32, tokens)
		r := tr.Prior().Draw(rng, make([]float32, src.FeatureDim))
		for k := range tokens {
			i := rng.IntN(src.Len())
			copy(states[k*d:], src.States[i*d:(i+1)*d])
			raw[k] = r.At(src, i)
			bins[k] = int32(skills.RewardBin(raw[k], tr.Prior().Scale, cfg.Arch.Bins))
		}
		mean, _ := tr.Model().Encode(states, bins, 1, tokens)
		if err := enc.EncodeReward(states, raw, one, z); err != nil {
			t.Fatal(err)
		}
		for i := range z {
			worst = max(worst, math.Abs(float64(z[i]-mean[i])))
		}
	}
	t.Logf("largest |z_skills - z_trainer| over 40 rewards x %d latents: %.2e", cfg.Arch.Latent, worst)
	if worst > 1e-5 {
		t.Fatalf("skills' encoder differs from the trainer's by %g", worst)
	}
}
