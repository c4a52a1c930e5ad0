package dice

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRestoreContinuesBitIdentically trains 6 steps straight, and 3 + save
// + a fresh learner restored from the save (with the generator's state) +
// 3, with a latent: the parameters must be equal bit for bit.
func TestRestoreContinuesBitIdentically(t *testing.T) {
	data, reward, _ := syntheticSet(1500, 7)
	cfg := smallConfig()
	cfg.Latent = 2
	z := []float32{0.3, -1}
	start := func() (*Value, *rand.PCG) {
		src := rand.NewPCG(5, 6)
		v, err := NewValue(data, cfg, rand.New(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.SetReward(reward); err != nil {
			t.Fatal(err)
		}
		if err := v.SetLatent(z); err != nil {
			t.Fatal(err)
		}
		return v, src
	}
	step := func(v *Value, n int) {
		for range n {
			if _, err := v.Step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	straight, _ := start()
	step(straight, 6)

	first, src := start()
	step(first, 3)
	saved, rng := first.State(), must(src.MarshalBinary())
	step(first, 1) // must not change the saved copy
	resumed, src2 := start()
	if err := resumed.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if err := src2.UnmarshalBinary(rng); err != nil {
		t.Fatal(err)
	}
	step(resumed, 3)
	if !slices.Equal(straight.V.Params(), resumed.V.Params()) || !slices.Equal(weights(t, straight), weights(t, resumed)) {
		t.Fatal("resumed parameters differ from the straight run")
	}
}

func must[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}

func TestRestoreRejectsForeignState(t *testing.T) {
	data, reward, _ := syntheticSet(300, 8)
	v := newValue(t, data, reward, smallConfig())
	good := v.State()
	tests := []struct {
		name string
		edit func(s *ValueState)
	}{
		{"short parameters", func(s *ValueState) { s.Params = s.Params[1:] }},
		{"short Adam", func(s *ValueState) { s.Adam.V = s.Adam.V[1:] }},
		{"latent Adam without a latent", func(s *ValueState) { s.LatentAdam.M, s.LatentAdam.V = []float32{0}, []float32{0} }},
		{"negative Adam steps", func(s *ValueState) { s.Adam.Steps = -1 }},
		{"NaN parameter", func(s *ValueState) { s.Params[3] = float32(math.NaN()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := v.State()
			tc.edit(&s)
			if err := v.Restore(s); !errors.Is(err, ErrState) {
				t.Fatalf("Restore = %v, want ErrState", err)
			}
			if !slices.Equal(v.V.Params(), good.Params) {
				t.Fatal("a refused state changed the learner")
			}
		})
	}
}
