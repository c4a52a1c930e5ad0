package dataset

import (
	"errors"
	"math"
	"testing"
)

func goodOffline() *Offline {
	return &Offline{
		ObsDim: 2, ActDim: 1,
		Obs:          []float32{0, 1, 2, 3, 4, 5},
		Act:          []float32{-1, 0.5, 1},
		NextObs:      []float32{2, 3, 4, 5, 6, 7},
		Terminal:     []bool{false, false, true},
		Timeout:      []bool{false, false, false},
		EpisodeStart: []bool{true, false, false},
	}
}

func goodExpert() *Expert { return &Expert{ObsDim: 2, Obs: []float32{1, 1, 2, 2}} }

func TestCheckPair(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name   string
		edit   func(o *Offline, e *Expert)
		target any // a typed error to match with errors.As, or a sentinel
		field  string
	}{
		{"valid", func(*Offline, *Expert) {}, nil, ""},
		{"action at tolerance", func(o *Offline, _ *Expert) { o.Act[0] = -1 - ActionTolerance/2 }, nil, ""},
		{"NaN observation", func(o *Offline, _ *Expert) { o.Obs[3] = nan }, &NonFiniteError{}, "observations"},
		{"Inf next observation", func(o *Offline, _ *Expert) { o.NextObs[0] = inf }, &NonFiniteError{}, "next observations"},
		{"NaN action", func(o *Offline, _ *Expert) { o.Act[1] = nan }, &NonFiniteError{}, "actions"},
		{"NaN expert state", func(_ *Offline, e *Expert) { e.Obs[2] = nan }, &NonFiniteError{}, "expert observations"},
		{"action out of range", func(o *Offline, _ *Expert) { o.Act[2] = 1.5 }, &ActionRangeError{}, ""},
		{"short observations", func(o *Offline, _ *Expert) { o.Obs = o.Obs[:5] }, &ShapeError{}, "observations"},
		{"short actions", func(o *Offline, _ *Expert) { o.Act = o.Act[:2] }, &ShapeError{}, "actions"},
		{"long next observations", func(o *Offline, _ *Expert) { o.NextObs = append(o.NextObs, 1, 1) }, &ShapeError{}, "next observations"},
		{"short timeout", func(o *Offline, _ *Expert) { o.Timeout = o.Timeout[:1] }, &ShapeError{}, "timeout"},
		{"short episode_start", func(o *Offline, _ *Expert) { o.EpisodeStart = nil }, &ShapeError{}, "episode_start"},
		{"ragged expert", func(_ *Offline, e *Expert) { e.Obs = e.Obs[:3] }, &ShapeError{}, "expert observations"},
		{"zero observation width", func(o *Offline, _ *Expert) { o.ObsDim = 0 }, &DimError{}, "offline observation dimension"},
		{"zero action width", func(o *Offline, _ *Expert) { o.ActDim = 0 }, &DimError{}, "action dimension"},
		{"expert width differs", func(_ *Offline, e *Expert) { e.ObsDim, e.Obs = 1, []float32{1} }, &DimError{}, "expert observation dimension"},
		{"expert width zero", func(_ *Offline, e *Expert) { e.ObsDim = 0 }, &DimError{}, "expert observation dimension"},
		{"empty expert", func(_ *Offline, e *Expert) { e.Obs = nil }, ErrEmptyExpert, ""},
		{"empty offline", func(o *Offline, _ *Expert) { *o = Offline{ObsDim: 2, ActDim: 1} }, ErrEmptyOffline, ""},
		{"no initial state", func(o *Offline, _ *Expert) { o.EpisodeStart[0] = false }, ErrNoInitialState, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, e := goodOffline(), goodExpert()
			tc.edit(o, e)
			err := CheckPair(o, e)
			if err != nil {
				t.Logf("error: %v", err)
			}
			if tc.target == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			field := ""
			switch want := tc.target.(type) {
			case *NonFiniteError:
				if !errors.As(err, &want) {
					t.Fatalf("error %v (%T), want NonFiniteError", err, err)
				}
				field = want.Field
			case *ShapeError:
				if !errors.As(err, &want) {
					t.Fatalf("error %v (%T), want ShapeError", err, err)
				}
				field = want.Field
			case *DimError:
				if !errors.As(err, &want) {
					t.Fatalf("error %v (%T), want DimError", err, err)
				}
				field = want.Field
			case *ActionRangeError:
				if !errors.As(err, &want) {
					t.Fatalf("error %v (%T), want ActionRangeError", err, err)
				}
				if want.Row != 2 || want.Col != 0 {
					t.Fatalf("ActionRangeError at %d,%d", want.Row, want.Col)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
			}
			if field != tc.field {
				t.Fatalf("error names field %q, want %q", field, tc.field)
			}
		})
	}
}

func TestNonFiniteErrorLocatesTheValue(t *testing.T) {
	err := CheckFinite("x", []float32{0, 1, 2, 3, float32(math.NaN()), 5}, 3)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Row != 1 || nf.Col != 1 {
		t.Fatalf("got %v", err)
	}
}

func TestInitialStates(t *testing.T) {
	o := goodOffline()
	o.EpisodeStart[2] = true
	if got := o.InitialStates(); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Fatalf("InitialStates = %v", got)
	}
}

// FuzzValidate builds datasets of arbitrary shape and content: validation
// must answer with an error or nil, never panic, and accept only datasets
// whose shapes are consistent.
func FuzzValidate(f *testing.F) {
	f.Add(2, 1, 3, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add(0, 0, 0, []byte{})
	f.Add(-3, 2, 1, []byte{255, 255, 127, 127})
	f.Fuzz(func(t *testing.T, obsDim, actDim, n int, raw []byte) {
		n, obsDim, actDim = n%64, obsDim%16, actDim%16
		vals := func(k int) []float32 {
			if k < 0 {
				k = 0
			}
			s := make([]float32, k)
			for i := range s {
				if len(raw) > 0 {
					s[i] = float32(int8(raw[i%len(raw)])) / 100
					if raw[i%len(raw)] == 0xff {
						s[i] = float32(math.NaN())
					}
				}
			}
			return s
		}
		flags := func(k int) []bool {
			b := make([]bool, max(k, 0))
			for i := range b {
				b[i] = len(raw) > 0 && raw[(i+3)%len(raw)]&1 == 1
			}
			return b
		}
		o := &Offline{
			ObsDim: obsDim, ActDim: actDim,
			Obs: vals(n * obsDim), Act: vals(n*actDim - len(raw)%2), NextObs: vals(n * obsDim),
			Terminal: flags(n), Timeout: flags(n), EpisodeStart: flags(n),
		}
		e := &Expert{ObsDim: obsDim, Obs: vals(n*obsDim + len(raw)%3)}
		if err := CheckPair(o, e); err == nil {
			if n <= 0 || len(o.Obs) != n*obsDim || len(o.Act) != n*actDim || e.Len() == 0 {
				t.Fatalf("accepted inconsistent dataset n=%d obs=%d act=%d", n, obsDim, actDim)
			}
		}
	})
}
