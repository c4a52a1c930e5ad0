package dice

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRestoreContinuesBitIdentically trains 6 rounds (a step and a weight
// pass) straight, and 3 + save + a fresh learner restored from the save
// (with the generator's state) + 3, with a latent: the parameters and the
// weights must be equal bit for bit, for exact passes and for passes that
// refresh one block at a time (whose kept values the state carries).
func TestRestoreContinuesBitIdentically(t *testing.T) {
	data, reward, _ := syntheticSet(1500, 7)
	for _, refresh := range []int{0, 400} {
		t.Run(fmt.Sprintf("refresh %d rows", refresh), func(t *testing.T) {
			cfg := smallConfig()
			cfg.Latent, cfg.RefreshRows = 2, refresh
			z := []float32{0.3, -1}
			start := func() (*Value, *rand.PCG) {
				src := rand.NewPCG(5, 6)
				v := newValueFrom(t, data, reward, cfg, src)
				if err := v.SetLatent(z); err != nil {
					t.Fatal(err)
				}
				return v, src
			}
			var last []float64
			rounds := func(v *Value, n int) {
				for range n {
					if _, err := v.Step(); err != nil {
						t.Fatal(err)
					}
					last = slices.Clone(weights(t, v))
				}
			}
			straight, _ := start()
			rounds(straight, 6)
			want := last

			first, src := start()
			rounds(first, 3)
			saved, rng := first.State(), must(src.MarshalBinary())
			if (saved.Cache != nil) != (refresh > 0) {
				t.Fatalf("state keeps %d values with RefreshRows %d", len(saved.Cache), refresh)
			}
			rounds(first, 1) // must not change the saved copy
			resumed, src2 := start()
			if err := resumed.Restore(saved); err != nil {
				t.Fatal(err)
			}
			if err := src2.UnmarshalBinary(rng); err != nil {
				t.Fatal(err)
			}
			rounds(resumed, 3)
			if !slices.Equal(straight.V.Params(), resumed.V.Params()) || !slices.Equal(want, last) {
				t.Fatal("resumed parameters or weights differ from the straight run")
			}
		})
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
		{"kept values for exact passes", func(s *ValueState) { s.Passes, s.Cache = 1, make([]float32, 300+1) }},
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

	cfg := smallConfig()
	cfg.RefreshRows = 100
	blocks := newValue(t, data, reward, cfg)
	weights(t, blocks)
	kept := blocks.State()
	for _, tc := range []struct {
		name string
		edit func(s *ValueState)
	}{
		{"short kept values", func(s *ValueState) { s.Cache = s.Cache[1:] }},
		{"NaN kept value", func(s *ValueState) { s.Cache[7] = float32(math.NaN()) }},
		{"negative passes", func(s *ValueState) { s.Passes = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := blocks.State()
			s.Cache = slices.Clone(s.Cache)
			tc.edit(&s)
			if err := blocks.Restore(s); !errors.Is(err, ErrState) {
				t.Fatalf("Restore = %v, want ErrState", err)
			}
			if now := blocks.State(); now.Passes != kept.Passes || !slices.Equal(now.Cache, kept.Cache) {
				t.Fatal("a refused state changed the kept values")
			}
		})
	}
}
