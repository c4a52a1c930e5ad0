package datafile

import (
	"math/rand/v2"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/dataset"
)

func contract(t testing.TB, l skills.Layout) skills.Contract {
	t.Helper()
	c, err := skills.NewContract(l)
	if err != nil {
		t.Fatal(err)
	}
	if l.Name == skills.LayoutNavigation171 {
		c.EpisodeSeconds = 12
	}
	return c
}

// sample is a small valid offline archive: two modes (one expert), two episodes, n transitions.
func sample(t testing.TB, l skills.Layout, n int) *Offline {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	d := l.Dim()
	o := &Offline{
		Manifest: Manifest{
			FormatVersion: FormatVersion, Kind: KindOffline, Task: "test",
			Contract: contract(t, l), Transitions: n, Seed: 7,
			Modes: []Mode{{Name: "expert", Expert: true, Episodes: 1}, {Name: "random", Episodes: 1, Falls: 1}},
		},
		Data: dataset.Offline{
			ObsDim: d, ActDim: skills.NumJoints,
			Obs: make([]float32, n*d), Act: make([]float32, n*skills.NumJoints), NextObs: make([]float32, n*d),
			Terminal: make([]bool, n), Timeout: make([]bool, n), EpisodeStart: make([]bool, n),
		},
		Withheld: Withheld{
			Reward: make([]float32, n), IsExpert: make([]bool, n), Mode: make([]int32, n),
			BasePosition: make([]float32, 3*n), BaseRPY: make([]float32, 3*n),
		},
	}
	for _, x := range [][]float32{o.Data.Obs, o.Data.NextObs, o.Withheld.Reward, o.Withheld.BasePosition, o.Withheld.BaseRPY} {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
	}
	for i := range o.Data.Act {
		o.Data.Act[i] = float32(2*rng.Float64() - 1)
	}
	half := n / 2
	o.Data.EpisodeStart[0], o.Data.EpisodeStart[half] = true, true
	o.Data.Timeout[half-1], o.Data.Terminal[n-1] = true, true
	for i := range n {
		if i < half {
			o.Withheld.IsExpert[i] = true
		} else {
			o.Withheld.Mode[i] = 1
		}
	}
	o.Manifest.ExpertTransitions = half
	o.Manifest.Modes[0].Transitions, o.Manifest.Modes[1].Transitions = half, n-half
	return o
}

// expertOf is the expert archive of sample's expert rows.
func expertOf(o *Offline) *Expert {
	m := o.Manifest
	m.Kind, m.Modes, m.Transitions = KindExpert, nil, m.ExpertTransitions
	d := o.Data.ObsDim
	return &Expert{Manifest: m, Data: dataset.Expert{ObsDim: d, Obs: append([]float32(nil), o.Data.Obs[:m.Transitions*d]...)}}
}
