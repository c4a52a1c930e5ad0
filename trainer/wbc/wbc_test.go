package wbc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
)

// pointSet is a small continuous task: a point at x moves by 0.5 a per
// step; every fifth episode of 50 steps is an expert's, who heads to x = 2
// (a = clip(2 (2 - x))); the others act uniformly at random.
func pointSet(n int, seed uint64) (*dataset.Offline, []bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	o := &dataset.Offline{ObsDim: 2, ActDim: 1}
	isExpert := make([]bool, n)
	x := 0.0
	for i := range n {
		step := i % 50
		expert := (i/50)%5 == 0
		if step == 0 {
			x = 6*rng.Float64() - 3
		}
		a := 2*rng.Float64() - 1
		if expert {
			a = min(max(2*(2-x), -1), 1)
		}
		next := x + 0.5*a + 0.05*rng.NormFloat64()
		o.Obs = append(o.Obs, float32(x), float32(rng.NormFloat64()))
		o.NextObs = append(o.NextObs, float32(next), float32(rng.NormFloat64()))
		o.Act = append(o.Act, float32(a))
		o.Terminal = append(o.Terminal, false)
		o.Timeout = append(o.Timeout, step == 49)
		o.EpisodeStart = append(o.EpisodeStart, step == 0)
		isExpert[i] = expert
		x = next
	}
	return o, isExpert
}

func smallConfig() Config {
	return Config{Hidden: []int{32, 32}, Activation: nn.ReLU, LR: 1e-3, Batch: 256}
}

func newLearner(t testing.TB, data *dataset.Offline, cfg Config, seed uint64) (*Learner, *rand.PCG) {
	t.Helper()
	src := rand.NewPCG(seed, 1)
	l, err := New(data, cfg, rand.New(src))
	if err != nil {
		t.Fatal(err)
	}
	return l, src
}

// TestWeightedCloningFollowsTheWeights: with all weight on the expert's
// transitions the policy acts like the expert there, while uniform weights
// (plain cloning of the mix) do not.
func TestWeightedCloningFollowsTheWeights(t *testing.T) {
	data, isExpert := pointSet(5000, 5)
	w := make([]float64, len(isExpert))
	var obs []float32
	var want []float64
	for i, e := range isExpert {
		if e {
			w[i] = 1
			if len(want) < 200 {
				obs = append(obs, data.Obs[2*i:2*i+2]...)
				want = append(want, float64(data.Act[i]))
			}
		}
	}
	meanErr := func(l *Learner) float64 {
		act := make([]float32, len(want))
		l.Pi.Mode(&nn.Tape[float32]{}, obs, len(want), act)
		e := 0.0
		for r, a := range act {
			e += math.Abs(float64(a)-want[r]) / float64(len(want))
		}
		return e
	}
	weighted, _ := newLearner(t, data, smallConfig(), 1)
	if err := weighted.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	uniform, _ := newLearner(t, data, smallConfig(), 1)
	for range 1500 {
		weighted.Step()
		uniform.Step()
	}
	ew, eu := meanErr(weighted), meanErr(uniform)
	t.Logf("mean |a - a_expert| on expert states: weighted %.3f, uniform %.3f", ew, eu)
	if ew > 0.1 || eu < 2*ew {
		t.Errorf("weighted cloning error %.3f (uniform %.3f), want <= 0.1 and well below uniform", ew, eu)
	}
}

func TestSetWeightsRefusesWhatItCannotDrawFrom(t *testing.T) {
	data, _ := pointSet(50, 9)
	l, _ := newLearner(t, data, smallConfig(), 1)
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
		if err := l.SetWeights(c.w); !errors.Is(err, ErrWeights) {
			t.Errorf("%s: error %v, want ErrWeights", c.name, err)
		}
	}
}

// TestDrawsFollowTheWeights checks the resampling Step uses: a new learner
// draws uniformly; after SetWeights, transitions of zero weight are never
// drawn and the others in proportion to their weights; a refused
// SetWeights leaves the distribution as it was.
func TestDrawsFollowTheWeights(t *testing.T) {
	data, _ := pointSet(10, 10)
	l, _ := newLearner(t, data, smallConfig(), 1)
	checkDraws := func(when string, w []float64) { t.Helper(); checkDraws(t, l, when, w) }
	checkDraws("new learner", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	w := []float64{0, 1, 0, 2, 0, 0, 4, 0, 0, 3} // the first and last rows included
	if err := l.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	checkDraws("after SetWeights", w)
	if err := l.SetWeights([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, -1}); err == nil {
		t.Fatal("a negative weight was accepted")
	}
	checkDraws("after a refused SetWeights", w)

	// Rows: uniform over the list (row 3 twice), until the next SetWeights;
	// a refused list leaves the distribution as it was.
	if err := l.SetRows([]int32{3, 7, 3, 0}); err != nil {
		t.Fatal(err)
	}
	rowsW := []float64{1, 0, 0, 2, 0, 0, 0, 1, 0, 0}
	checkDraws("after SetRows", rowsW)
	for _, bad := range [][]int32{nil, {1, 10}, {-1}} {
		if err := l.SetRows(bad); !errors.Is(err, ErrWeights) {
			t.Errorf("rows %v: error %v, want ErrWeights", bad, err)
		}
	}
	checkDraws("after a refused SetRows", rowsW)
	if err := l.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	checkDraws("after SetRows and SetWeights", w)
}

// checkDraws checks that l draws row i in proportion to p[i] (5 standard
// deviations of 200,000 draws), rows of p 0 never.
func checkDraws(t *testing.T, l *Learner, when string, p []float64) {
	t.Helper()
	const draws = 200000
	total := 0.0
	for _, x := range p {
		total += x
	}
	counts := make([]int, len(p))
	for range draws {
		counts[l.draw()]++
	}
	for i, c := range counts {
		q := p[i] / total
		sd := math.Sqrt(draws * q * (1 - q))
		if math.Abs(float64(c)-draws*q) > 5*sd || (q == 0 && c != 0) {
			t.Errorf("%s: row %d drawn %d times, want %.0f ± %.0f", when, i, c, draws*q, 5*sd)
		}
	}
}

// TestTiltDrawsByReward: with Config.Tilt k the draws and the resampled
// rows follow w_i exp(k r_i), whatever the rewards' offset (none
// overflows); Tilt 0 ignores the reward; a tilt without a reward, a reward
// that does not fit, and weights whose tilted sum underflows are refused,
// leaving the distribution as it was.
func TestTiltDrawsByReward(t *testing.T) {
	data, _ := pointSet(6, 11)
	w := []float64{0, 1, 2, 1, 0.5, 3}
	r := []float32{5, 0, -1, 1, 2, -3}
	tilted := func(k float64, offset float32) []float64 {
		p := make([]float64, len(w))
		for i := range w {
			p[i] = w[i] * math.Exp(k*float64(r[i]-offset))
		}
		return p
	}
	cfg := smallConfig()
	cfg.Tilt = 1.5
	l, _ := newLearner(t, data, cfg, 1)
	if err := l.SetWeights(w); !errors.Is(err, ErrWeights) {
		t.Errorf("a tilt with no reward: error %v, want ErrWeights", err)
	}
	for _, offset := range []float32{0, 1e6} {
		shifted := make([]float32, len(r))
		for i := range r {
			shifted[i] = r[i] + offset
		}
		if err := l.SetTiltReward(shifted); err != nil {
			t.Fatal(err)
		}
		if err := l.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		p := tilted(cfg.Tilt, 0)
		checkDraws(t, l, fmt.Sprintf("tilt %v, rewards offset by %v", cfg.Tilt, offset), p)
		total := 0.0
		for _, x := range p {
			total += x
		}
		counts := make([]int, len(p))
		const k = 1000
		for _, row := range l.Resample(k) {
			counts[row]++
		}
		for i, n := range counts {
			if want := k * p[i] / total; math.Abs(float64(n)-want) >= 1 {
				t.Errorf("offset %v: row %d resampled %d times, want %.2f", offset, i, n, want)
			}
		}
	}
	for _, c := range []struct {
		name string
		r    []float32
	}{
		{"short", r[:5]},
		{"NaN", []float32{0, 0, float32(math.NaN()), 0, 0, 0}},
		{"infinite", []float32{0, 0, 0, 0, 0, float32(math.Inf(-1))}},
	} {
		if err := l.SetTiltReward(c.r); err == nil {
			t.Errorf("tilt reward %s accepted", c.name)
		}
	}
	// Every weight on rows whose factor underflows: nothing to draw.
	if err := l.SetTiltReward([]float32{0, -1000, -1000, -1000, -1000, -1000}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetWeights([]float64{0, 1, 1, 1, 1, 1}); !errors.Is(err, ErrWeights) {
		t.Errorf("weights all on underflowing factors: error %v, want ErrWeights", err)
	}
	checkDraws(t, l, "after a refused SetWeights", tilted(cfg.Tilt, 0))

	plain, _ := newLearner(t, data, smallConfig(), 1)
	if err := plain.SetTiltReward(r); err != nil {
		t.Fatal(err)
	}
	if err := plain.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	checkDraws(t, plain, "tilt 0", w)
	for _, k := range []float64{-1, math.NaN(), math.Inf(1)} {
		cfg.Tilt = k
		if _, err := New(data, cfg, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrConfig) {
			t.Errorf("tilt %v: error %v, want ErrConfig", k, err)
		}
	}
}

// TestTemperatureSharpensDraws: at Config.Temperature T the draws follow
// w_i^(1/T), tilted as before when a tilt is set, also for weights so small
// that their powers would underflow without the scaling by the largest;
// 0 and 1 draw by w itself; a negative, NaN or infinite temperature is
// refused.
func TestTemperatureSharpensDraws(t *testing.T) {
	data, _ := pointSet(6, 11)
	w := []float64{0, 1, 2, 1, 0.5, 3}
	r := []float32{5, 0, -1, 1, 2, -3}
	powered := func(scale, temperature, tilt float64) ([]float64, []float64) {
		in, p := make([]float64, len(w)), make([]float64, len(w))
		for i := range w {
			in[i] = w[i] * scale
			p[i] = math.Pow(w[i], 1/temperature) * math.Exp(tilt*float64(r[i]))
		}
		return in, p
	}
	for _, c := range []struct {
		temperature, tilt, scale float64
	}{
		{0.5, 0, 1},
		{0.25, 0, 1e-300},
		{2, 0, 1},
		{0.5, 1.5, 1e-200},
		{1, 0, 1},
		{0, 0, 1},
	} {
		cfg := smallConfig()
		cfg.Temperature, cfg.Tilt = c.temperature, c.tilt
		l, _ := newLearner(t, data, cfg, 1)
		if err := l.SetTiltReward(r); err != nil {
			t.Fatal(err)
		}
		temperature := c.temperature
		if temperature == 0 {
			temperature = 1
		}
		in, p := powered(c.scale, temperature, c.tilt)
		if err := l.SetWeights(in); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		checkDraws(t, l, fmt.Sprintf("temperature %v, tilt %v, weights scaled by %v", c.temperature, c.tilt, c.scale), p)
	}
	for _, bad := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		cfg := smallConfig()
		cfg.Temperature = bad
		if _, err := New(data, cfg, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrConfig) {
			t.Errorf("temperature %v: error %v, want ErrConfig", bad, err)
		}
	}
}

// TestResampleFollowsTheWeights: each row appears k w_i / sum w times,
// rounded one way or the other (systematic resampling), rows of zero weight
// never, the first and last rows included (a learner's Resample:
// TestTiltDrawsByReward).
func TestResampleFollowsTheWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct {
		name string
		w    []float64
		k    int
	}{
		{"exact", []float64{0, 1, 3, 0, 4}, 8},
		{"first and last", []float64{2, 0, 0, 0, 2}, 5},
		{"one row", []float64{0, 0, 7, 0}, 3},
		{"random", func() []float64 {
			w := make([]float64, 1000)
			for i := range w {
				if rng.IntN(3) > 0 {
					w[i] = rng.ExpFloat64()
				}
			}
			return w
		}(), 4096},
	} {
		cdf, sum := make([]float64, len(c.w)), 0.0
		for i, x := range c.w {
			sum += x
			cdf[i] = sum
		}
		rows := ResampleCDF(cdf, c.k)
		if len(rows) != c.k {
			t.Fatalf("%s: %d rows, want %d", c.name, len(rows), c.k)
		}
		counts := make([]int, len(c.w))
		for _, r := range rows {
			counts[r]++
		}
		total := 0.0
		for _, x := range c.w {
			total += x
		}
		for i, n := range counts {
			want := float64(c.k) * c.w[i] / total
			if math.Abs(float64(n)-want) >= 1 || (c.w[i] == 0 && n != 0) {
				t.Errorf("%s: row %d appears %d times, want %.2f", c.name, i, n, want)
			}
		}
	}
}

// TestRestoreContinuesBitIdentically: 6 steps straight and 3 + restore + 3,
// with a latent, end with the same parameters bit for bit; Rebuild gives
// the same network back from the parameters.
func TestRestoreContinuesBitIdentically(t *testing.T) {
	data, _ := pointSet(500, 3)
	cfg := smallConfig()
	cfg.Latent = 3
	z := []float32{1, 0, -0.5}
	start := func() (*Learner, *rand.PCG) {
		l, src := newLearner(t, data, cfg, 4)
		if err := l.SetLatent(z); err != nil {
			t.Fatal(err)
		}
		return l, src
	}
	straight, _ := start()
	for range 6 {
		straight.Step()
	}
	first, src := start()
	for range 3 {
		first.Step()
	}
	saved := first.State()
	rng, _ := src.MarshalBinary()
	resumed, src2 := start()
	if err := resumed.Restore(saved); err != nil {
		t.Fatal(err)
	}
	_ = src2.UnmarshalBinary(rng)
	for range 3 {
		resumed.Step()
	}
	if !slices.Equal(straight.Net.Params(), resumed.Net.Params()) {
		t.Fatal("resumed parameters differ from the straight run")
	}
	back, err := Rebuild(data.ObsDim, data.ActDim, cfg, straight.Net.Params())
	if err != nil || !slices.Equal(back.Params(), straight.Net.Params()) {
		t.Fatalf("Rebuild: %v", err)
	}
	for _, bad := range []Config{
		{Hidden: []int{32, 31}, Latent: 3}, {Hidden: []int{32, 32}, Latent: 2}, {Hidden: []int{32, 32}, Latent: 1 << 40},
		{Hidden: []int{1 << 40}, Latent: 3}, {Hidden: []int{-1}},
	} {
		if _, err := Rebuild(data.ObsDim, data.ActDim, bad, straight.Net.Params()); !errors.Is(err, ErrParams) {
			t.Errorf("Rebuild with %+v: %v, want ErrParams", bad, err)
		}
	}
	s := straight.State()
	s.Adam.M = s.Adam.M[1:]
	if err := resumed.Restore(s); !errors.Is(err, ErrState) {
		t.Errorf("Restore of a short state: %v", err)
	}
}

// TestAverageFollowsTheIterates: with Config.Average the learner keeps
// avg_t = d_t avg_{t-1} + (1 - d_t) theta_t, d_t = min(Average, (1+t)/(10+t)),
// from the initial parameters; it is what Deployed builds and State saves,
// and a resumed learner continues it bit-identically. A state without an
// average, or with a damaged one, is refused.
func TestAverageFollowsTheIterates(t *testing.T) {
	data, _ := pointSet(500, 3)
	cfg := smallConfig()
	cfg.Latent, cfg.Average = 2, 0.9
	l, src := newLearner(t, data, cfg, 5)
	if err := l.SetLatent([]float32{0.5, -1}); err != nil {
		t.Fatal(err)
	}
	want := l.Net.Params()
	for step := 1; step <= 40; step++ {
		l.Step()
		d := float32(min(0.9, float64(1+step)/float64(10+step)))
		for j, p := range l.Net.Params() {
			want[j] = d*want[j] + (1-d)*p
		}
	}
	st := l.State()
	if !slices.Equal(st.Average, want) || !slices.Equal(st.Deployed(), want) {
		t.Fatal("the average is not the recurrence over the iterates")
	}
	if slices.Equal(st.Average, st.Params) {
		t.Fatal("the average equals the last iterate: nothing was averaged")
	}
	net, err := l.Deployed()
	if err != nil || !slices.Equal(net.Params(), want) {
		t.Fatalf("Deployed is not the average: %v", err)
	}

	rng, _ := src.MarshalBinary()
	resume := func(s State) *Learner {
		r, src := newLearner(t, data, cfg, 99)
		if err := r.SetLatent([]float32{0.5, -1}); err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(s); err != nil {
			t.Fatal(err)
		}
		_ = src.UnmarshalBinary(rng)
		return r
	}
	resumed := resume(st)
	for range 5 {
		l.Step()
		resumed.Step()
	}
	if !slices.Equal(l.State().Average, resumed.State().Average) {
		t.Fatal("the resumed average differs from the straight run's")
	}
	for name, bad := range map[string][]float32{
		"missing":    nil,
		"short":      st.Average[:3],
		"non-finite": append(slices.Clone(st.Average[:len(st.Average)-1]), float32(math.NaN())),
	} {
		s := st
		s.Average = bad
		before := l.State()
		if err := l.Restore(s); !errors.Is(err, ErrState) {
			t.Errorf("%s average: %v, want ErrState", name, err)
		}
		if after := l.State(); !slices.Equal(after.Average, before.Average) || !slices.Equal(after.Params, before.Params) {
			t.Errorf("%s average: the refused state changed the learner", name)
		}
	}
	for _, a := range []float64{-0.1, 1, math.NaN()} {
		c := cfg
		c.Average = a
		if _, err := New(data, c, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrConfig) {
			t.Errorf("Average %v: %v, want ErrConfig", a, err)
		}
	}

	plain, _ := newLearner(t, data, smallConfig(), 5)
	plain.Step()
	if s := plain.State(); s.Average != nil || !slices.Equal(s.Deployed(), s.Params) {
		t.Fatal("a learner without averaging keeps an average")
	}
	if err := plain.Restore(st); !errors.Is(err, ErrState) {
		t.Errorf("a state with an average into a learner without: %v, want ErrState", err)
	}
	if net, err := plain.Deployed(); err != nil || net != plain.Net {
		t.Fatalf("Deployed without averaging is not the learner's network: %v", err)
	}
}

// TestMixtureKeepsTwoRoutesApart: where the weighted actions go round an
// obstacle on both sides (a = +0.8 or -0.8 at every state, half each), a
// single Gaussian deploys their mean, straight into it (a near 0); a mixture
// of two or three deploys one of the routes. (Without nn's SpreadMeans the
// two components of K = 2 stayed together, at the mean, for 2,000 steps.)
func TestMixtureKeepsTwoRoutesApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 4000
	o := &dataset.Offline{ObsDim: 2, ActDim: 1}
	for i := range n {
		x := float32(2*rng.Float64() - 1)
		a := float32(0.8)
		if i%2 == 1 {
			a = -0.8
		}
		o.Obs = append(o.Obs, x, 0)
		o.NextObs = append(o.NextObs, x, 0)
		o.Act = append(o.Act, a)
		o.Terminal = append(o.Terminal, false)
		o.Timeout = append(o.Timeout, i%50 == 49)
		o.EpisodeStart = append(o.EpisodeStart, i%50 == 0)
	}
	obs := []float32{-0.9, 0, -0.3, 0, 0.2, 0, 0.8, 0}
	for _, tc := range []struct {
		components int
		// deployed is whether the deployed action must be a route (|a| near
		// 0.8) or their mean (|a| near 0).
		route bool
	}{{1, false}, {2, true}, {3, true}} {
		cfg := smallConfig()
		cfg.Components = tc.components
		l, _ := newLearner(t, o, cfg, 1)
		for range 1500 {
			l.Step()
		}
		act := make([]float32, len(obs)/2)
		l.Pi.Mode(&nn.Tape[float32]{}, obs, len(act), act)
		t.Logf("%d components: deployed actions %v", tc.components, act)
		for _, a := range act {
			if onRoute := math.Abs(math.Abs(float64(a))-0.8) < 0.1; onRoute != tc.route || (!tc.route && math.Abs(float64(a)) > 0.2) {
				t.Errorf("%d components: deployed action %v; want a route (|a| = 0.8): %v", tc.components, a, tc.route)
			}
		}
	}
}
