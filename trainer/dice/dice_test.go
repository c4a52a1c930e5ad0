package dice

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/trainer/dataset"
)

func TestDualLossGradientCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const b, b0, gamma = 9, 5, 0.99
	r, notDone := make([]float64, b), make([]float64, b)
	v, vNext, v0 := make([]float64, b), make([]float64, b), make([]float64, b0)
	for i := range b {
		r[i] = 3 * rng.NormFloat64()
		v[i], vNext[i] = 5*rng.NormFloat64(), 5*rng.NormFloat64()
		if i%4 != 0 {
			notDone[i] = 1
		}
	}
	for i := range v {
		v[i] -= 100 // every exp(delta) far past float32 overflow
	}
	for i := range v0 {
		v0[i] = rng.NormFloat64()
	}
	delta := make([]float64, b)
	gv, gvNext, gv0 := make([]float64, b), make([]float64, b), make([]float64, b0)
	loss := dualLoss(gamma, r, notDone, v, vNext, v0, delta, gv, gvNext, gv0)
	scratch := [3][]float64{make([]float64, b), make([]float64, b), make([]float64, b0)}
	f := func() float64 {
		return dualLoss(gamma, r, notDone, v, vNext, v0, delta, scratch[0], scratch[1], scratch[2])
	}
	for _, c := range []struct {
		name string
		x, g []float64
	}{{"V(s)", v, gv}, {"V(s')", vNext, gvNext}, {"V(s0)", v0, gv0}} {
		worst, floor := 0.0, 1e-9
		for _, g := range c.g {
			floor = max(floor, 1e-3*math.Abs(g)) // smaller entries: central differences are rounding noise
		}
		for i := range c.x {
			// The loss is smooth and about 100 here: a wider step keeps
			// rounding (1e-16 * 100 / h) below truncation (h^2).
			orig := c.x[i]
			c.x[i] = orig + 1e-4
			up := f()
			c.x[i] = orig - 1e-4
			down := f()
			c.x[i] = orig
			fd := (up - down) / 2e-4
			worst = max(worst, math.Abs(fd-c.g[i])/max(math.Abs(fd)+math.Abs(c.g[i]), floor))
		}
		t.Logf("d loss / d %s: max relative error %.2e", c.name, worst)
		if worst > 1e-6 {
			t.Errorf("gradient w.r.t. %s wrong: %.2e", c.name, worst)
		}
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		t.Fatalf("loss %v", loss)
	}
}

// syntheticSet is a small continuous task: a point at x moves by 0.5*a per
// step (plus noise) and the reward, playing r_E, is high near x = 2. Every
// fifth episode of 50 steps is an expert's, who heads to x = 2 and holds
// there; the others act uniformly at random. Episodes start uniformly in
// [-3, 3]. The second observation is noise.
func syntheticSet(n int, seed uint64) (*dataset.Offline, []float32, []bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	o := &dataset.Offline{ObsDim: 2, ActDim: 1}
	reward, isExpert := make([]float32, n), make([]bool, n)
	x := 0.0
	for i := range n {
		step := i % 50
		expert := (i/50)%5 == 0
		if step == 0 {
			x = 6*rng.Float64() - 3
		}
		a := 2*rng.Float64() - 1
		if expert {
			a = min(max(2*(2-x), -1), 1) + 0.05*rng.NormFloat64()
		}
		a = min(max(a, -1), 1)
		next := x + 0.5*a + 0.05*rng.NormFloat64()
		o.Obs = append(o.Obs, float32(x), float32(rng.NormFloat64()))
		o.NextObs = append(o.NextObs, float32(next), float32(rng.NormFloat64()))
		o.Act = append(o.Act, float32(a))
		o.Terminal = append(o.Terminal, false)
		o.Timeout = append(o.Timeout, step == 49)
		o.EpisodeStart = append(o.EpisodeStart, step == 0)
		reward[i] = float32(min(max(2-2*math.Abs(x-2), -3), 3))
		isExpert[i] = expert
		x = next
	}
	return o, reward, isExpert
}

func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.ValueHidden, cfg.PolicyHidden = []int{32, 32}, []int{32, 32}
	cfg.Batch, cfg.InitBatch, cfg.ChunkRows = 512, 256, 1000
	cfg.ValueLR, cfg.PolicyLR = 1e-3, 1e-3
	return cfg
}

// TestWeightsAreTheWholeSetSoftmax checks the chunked weight pass against
// a direct softmax, on transitions whose next observations are independent
// and on the same transitions chained into episodes (s'_i = s_{i+1}), where
// the pass reuses V(s_{i+1}).
func TestWeightsAreTheWholeSetSoftmax(t *testing.T) {
	independent, reward, _ := syntheticSet(2345, 3) // not a multiple of the chunk size
	chained := *independent
	chained.NextObs = slices.Clone(independent.NextObs)
	for i := range chained.Len() - 1 {
		if !chained.Timeout[i] {
			copy(chained.NextObs[2*i:2*i+2], chained.Obs[2*i+2:2*i+4])
		}
	}
	for _, c := range []struct {
		name string
		data *dataset.Offline
	}{{"independent", independent}, {"chained", &chained}} {
		t.Run(c.name, func(t *testing.T) { checkWholeSetSoftmax(t, c.data, reward) })
	}
}

func checkWholeSetSoftmax(t *testing.T, data *dataset.Offline, reward []float32) {
	tr, err := New(data, reward, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		tr.ValueStep()
	}
	w := append([]float64(nil), tr.Weights()...)
	// Recompute delta one transition at a time and softmax it directly.
	in := make([]float32, 2)
	delta := make([]float64, data.Len())
	lse := math.Inf(-1)
	for i := range delta {
		copy(in, data.NextObs[2*i:2*i+2])
		vn := float64(tr.V.Forward(&tr.vTape, in, 1)[0])
		copy(in, data.Obs[2*i:2*i+2])
		v := float64(tr.V.Forward(&tr.vTape, in, 1)[0])
		delta[i] = float64(reward[i]) + 0.99*vn - v
		lse = math.Max(lse, delta[i]) + math.Log1p(math.Exp(-math.Abs(lse-delta[i])))
	}
	sum := 0.0
	for i := range w {
		sum += w[i]
		if want := math.Exp(delta[i] - lse); math.Abs(w[i]-want) > 1e-5*want {
			t.Fatalf("w[%d] = %g, direct softmax %g", i, w[i], want)
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("weights sum to %v", sum)
	}
}

// TestSMODICEImitatesTheExpert runs the whole loop on the synthetic set: the
// weights must move onto the expert's transitions (which the trainer cannot
// see) and the policy must learn the expert's action there.
func TestSMODICEImitatesTheExpert(t *testing.T) {
	data, reward, isExpert := syntheticSet(8000, 5)
	cfg := smallConfig()
	cfg.ValueSteps, cfg.PolicySteps = 2, 2
	tr, err := New(data, reward, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var diag Diagnostics
	var w []float64
	for k := range 400 {
		if diag, w, err = tr.Iterate(); err != nil {
			t.Fatal(err)
		}
		if k%100 == 0 || k == 399 {
			mass, err := ExpertMass(w, isExpert)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("iteration %d: value loss %.3f, policy loss %.3f, ESS %.0f of %d, max w %.2e, KL %.3f, expert mass %.3f",
				diag.Iteration, diag.ValueLoss, diag.PolicyLoss, diag.Weights.ESS, len(w), diag.Weights.Max, diag.Weights.KL, mass)
		}
	}
	mass, _ := ExpertMass(w, isExpert)
	if mass < 0.5 {
		t.Errorf("expert mass %.3f, want >= 0.5 (base rate 0.2)", mass)
	}
	// On the expert's states the policy's mean action must be the expert's.
	var obs []float32
	var want []float64
	for i := range isExpert {
		if isExpert[i] && len(want) < 200 {
			obs = append(obs, data.Obs[2*i:2*i+2]...)
			want = append(want, float64(data.Act[i]))
		}
	}
	act := make([]float32, len(want))
	tr.Pi.Mode(&tr.piTape, obs, len(want), act)
	meanErr := 0.0
	for r, a := range act {
		meanErr += math.Abs(float64(a)-want[r]) / float64(len(want))
	}
	t.Logf("policy on expert states: mean |a - a_expert| = %.3f", meanErr)
	if meanErr > 0.2 {
		t.Errorf("policy mean action error %.3f on expert states, want <= 0.2", meanErr)
	}
}

func TestSummarise(t *testing.T) {
	const n = 1000
	uniform := make([]float64, n)
	for i := range uniform {
		uniform[i] = 1.0 / n
	}
	oneHot := make([]float64, n)
	oneHot[7] = 1
	half := make([]float64, n)
	half[0], half[1] = 0.5, 0.5
	tests := []struct {
		name string
		w    []float64
		want WeightStats
	}{
		{"uniform", uniform, WeightStats{ESS: n, Max: 1.0 / n, KL: 0}},
		{"one transition", oneHot, WeightStats{ESS: 1, Max: 1, KL: math.Log(n)}},
		{"two transitions", half, WeightStats{ESS: 2, Max: 0.5, KL: math.Log(n / 2)}},
	}
	for _, tc := range tests {
		got := Summarise(tc.w)
		if math.Abs(got.ESS-tc.want.ESS) > 1e-9*tc.want.ESS || got.Max != tc.want.Max || math.Abs(got.KL-tc.want.KL) > 1e-9 {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestExpertMass(t *testing.T) {
	m, err := ExpertMass([]float64{0.1, 0.6, 0.3}, []bool{true, false, true})
	if err != nil || math.Abs(m-0.4) > 1e-15 {
		t.Fatalf("ExpertMass = %v, %v", m, err)
	}
	if _, err := ExpertMass([]float64{1}, []bool{true, false}); !errors.Is(err, ErrLabelLength) {
		t.Fatalf("length mismatch: %v", err)
	}
}

// The algorithm must not be able to read expert labels: the offline set
// has no such column.
func TestOfflineSetHasNoExpertColumn(t *testing.T) {
	typ := reflect.TypeFor[dataset.Offline]()
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; strings.Contains(strings.ToLower(name), "expert") {
			t.Fatalf("dataset.Offline has field %s: expert labels must stay out of the trainer's data", name)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	data, reward, _ := syntheticSet(100, 1)
	nanReward := append([]float32(nil), reward...)
	nanReward[10] = float32(math.NaN())
	noStart := *data
	noStart.EpisodeStart = make([]bool, data.Len())
	nanObs := *data
	nanObs.Obs = append([]float32(nil), data.Obs...)
	nanObs.Obs[5] = float32(math.Inf(-1))
	var nonFinite *dataset.NonFiniteError
	tests := []struct {
		name   string
		data   *dataset.Offline
		reward []float32
		edit   func(*Config)
		check  func(error) bool
	}{
		{"short reward", data, reward[:99], nil, func(err error) bool { return errors.Is(err, ErrRewardLength) }},
		{"NaN reward", data, nanReward, nil, func(err error) bool { return errors.As(err, &nonFinite) && nonFinite.Field == "reward" }},
		{"Inf observation", &nanObs, reward, nil, func(err error) bool { return errors.As(err, &nonFinite) && nonFinite.Field == "observations" }},
		{"no initial state", &noStart, reward, nil, func(err error) bool { return errors.Is(err, dataset.ErrNoInitialState) }},
		{"gamma 1", data, reward, func(c *Config) { c.Gamma = 1 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"zero batch", data, reward, func(c *Config) { c.Batch = 0 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"zero-width layer", data, reward, func(c *Config) { c.ValueHidden = []int{0} }, func(err error) bool { return err != nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			_, err := New(tc.data, tc.reward, cfg)
			t.Logf("error: %v", err)
			if err == nil || !tc.check(err) {
				t.Fatalf("New returned %v", err)
			}
		})
	}
}

func TestSetPolicyWeightsRefusesWhatItCannotDrawFrom(t *testing.T) {
	data, reward, _ := syntheticSet(50, 9)
	tr, err := New(data, reward, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	ones := func(edit func(w []float64)) []float64 {
		w := make([]float64, data.Len())
		for i := range w {
			w[i] = 1
		}
		if edit != nil {
			edit(w)
		}
		return w
	}
	for _, c := range []struct {
		name string
		w    []float64
	}{
		{"short", ones(nil)[:49]},
		{"negative", ones(func(w []float64) { w[3] = -1e-9 })},
		{"NaN", ones(func(w []float64) { w[0] = math.NaN() })},
		{"infinite", ones(func(w []float64) { w[49] = math.Inf(1) })},
		{"all zero", make([]float64, data.Len())},
		{"overflowing sum", ones(func(w []float64) { w[0], w[1] = math.MaxFloat64, math.MaxFloat64 })},
	} {
		if err := tr.SetPolicyWeights(c.w); !errors.Is(err, ErrPolicyWeights) {
			t.Errorf("%s: error %v, want ErrPolicyWeights", c.name, err)
		}
	}
}

// TestPolicyDrawsFollowTheWeights checks the resampling PolicyStep uses: a
// new trainer draws uniformly; after SetPolicyWeights, transitions of zero
// weight are never drawn and the others in proportion to their weights; a
// refused SetPolicyWeights leaves the distribution as it was.
func TestPolicyDrawsFollowTheWeights(t *testing.T) {
	data, reward, _ := syntheticSet(10, 10)
	tr, err := New(data, reward, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	checkDraws := func(when string, w []float64) {
		t.Helper()
		const draws = 200000
		total := 0.0
		for _, x := range w {
			total += x
		}
		counts := make([]int, len(w))
		for range draws {
			counts[tr.drawWeighted()]++
		}
		for i, c := range counts {
			p := w[i] / total
			sd := math.Sqrt(draws * p * (1 - p))
			if math.Abs(float64(c)-draws*p) > 5*sd || (p == 0 && c != 0) {
				t.Errorf("%s: row %d drawn %d times, want %.0f ± %.0f", when, i, c, draws*p, 5*sd)
			}
		}
	}
	checkDraws("new trainer", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	w := []float64{0, 1, 0, 2, 0, 0, 4, 0, 0, 3} // the first and last rows included
	if err := tr.SetPolicyWeights(w); err != nil {
		t.Fatal(err)
	}
	checkDraws("after SetPolicyWeights", w)
	if err := tr.SetPolicyWeights([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, -1}); err == nil {
		t.Fatal("a negative weight was accepted")
	}
	checkDraws("after a refused SetPolicyWeights", w)
}

// TestIterateReportsDivergence: a value network whose outputs are not
// finite makes weights that are no distribution, and Iterate says so
// instead of training the policy on them.
func TestIterateReportsDivergence(t *testing.T) {
	data, reward, _ := syntheticSet(300, 11)
	cfg := smallConfig()
	cfg.ValueSteps = 0
	tr, err := New(data, reward, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.V.Params() {
		tr.V.Params()[i] = float32(math.NaN())
	}
	policy := slices.Clone(tr.Pi.Net.Params())
	if _, _, err := tr.Iterate(); !errors.Is(err, ErrDiverged) {
		t.Fatalf("error %v, want ErrDiverged", err)
	}
	if !slices.Equal(policy, tr.Pi.Net.Params()) {
		t.Error("the policy trained on weights that are not a distribution")
	}
}
