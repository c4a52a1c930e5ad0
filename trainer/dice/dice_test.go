package dice

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/nn"
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

func smallConfig() ValueConfig {
	cfg := DefaultValueConfig()
	cfg.Hidden = []int{32, 32}
	cfg.Batch, cfg.InitBatch, cfg.ChunkRows = 512, 256, 1000
	cfg.LR = 1e-3
	return cfg
}

// newValue is a value learner on data with reward set.
func newValue(t testing.TB, data *dataset.Offline, reward []float32, cfg ValueConfig) *Value {
	t.Helper()
	return newValueFrom(t, data, reward, cfg, rand.NewPCG(1, 0xd1ce))
}

// newValueFrom is newValue drawing from src, which the caller keeps.
func newValueFrom(t testing.TB, data *dataset.Offline, reward []float32, cfg ValueConfig, src *rand.PCG) *Value {
	t.Helper()
	v, err := NewValue(data, cfg, rand.New(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetReward(reward); err != nil {
		t.Fatal(err)
	}
	return v
}

func weights(t testing.TB, v *Value) []float64 {
	t.Helper()
	w, err := v.Weights()
	if err != nil {
		t.Fatal(err)
	}
	return w
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

// TestRefreshRowsEstimator checks the block-refreshing weight pass against
// exact passes of a twin learner (same seed, same steps): the first pass
// is exact; after a step it is not, StaleError says by how much (the total
// variation distance to the twin's weights); once every block has been
// refreshed with an unchanged V it is exact again.
func TestRefreshRowsEstimator(t *testing.T) {
	data, reward, _ := syntheticSet(1500, 9)
	cfg := smallConfig()
	exact := newValue(t, data, reward, cfg)
	cfg.RefreshRows = 400 // 4 blocks of 375
	blocks := newValue(t, data, reward, cfg)
	tv := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d += math.Abs(a[i] - b[i])
		}
		return d / 2
	}
	staleError := func(v *Value) float64 {
		e, err := v.StaleError()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if d := tv(weights(t, blocks), weights(t, exact)); d != 0 {
		t.Fatalf("first pass differs from an exact one by %g", d)
	}
	for range 20 {
		must(exact.Step())
		must(blocks.Step())
	}
	wExact := slices.Clone(weights(t, exact))
	d := tv(weights(t, blocks), wExact)
	if e := staleError(blocks); d < 1e-4 || math.Abs(e-d) > 1e-7 {
		t.Fatalf("after 20 steps: distance to the exact weights %g, StaleError %g", d, e)
	}
	t.Logf("after 20 steps, one block refreshed: total variation %.4f", d)
	if e := staleError(exact); e != 0 {
		t.Fatalf("StaleError of an exact pass %g", e)
	}
	for range 3 {
		weights(t, blocks)
	}
	// V evaluated in other chunks rounds differently in float32's last bits.
	if d, e := tv(blocks.w, wExact), staleError(blocks); d > 1e-7 || e > 1e-7 {
		t.Fatalf("every block refreshed: distance to the exact weights %g, StaleError %g", d, e)
	}
}

// directDelta is delta_i = r_i + gamma (1 - terminal_i) V(s'_i) - V(s_i),
// one transition at a time through the value network.
func directDelta(v *Value, data *dataset.Offline, reward []float32, gamma, fallValue float64) []float64 {
	var tape nn.Tape[float32]
	d := data.ObsDim
	delta := make([]float64, data.Len())
	for i := range delta {
		vn := float64(v.V.Net.Forward(&tape, data.NextObs[i*d:(i+1)*d], 1)[0])
		vs := float64(v.V.Net.Forward(&tape, data.Obs[i*d:(i+1)*d], 1)[0])
		if data.Terminal[i] {
			vn = fallValue
		}
		delta[i] = float64(reward[i]) + gamma*vn - vs
	}
	return delta
}

func checkWholeSetSoftmax(t *testing.T, data *dataset.Offline, reward []float32) {
	v := newValue(t, data, reward, smallConfig())
	for range 20 {
		if _, err := v.Step(); err != nil {
			t.Fatal(err)
		}
	}
	w := append([]float64(nil), weights(t, v)...)
	delta := directDelta(v, data, reward, 0.99, 0)
	lse := math.Inf(-1)
	for _, d := range delta {
		lse = math.Max(lse, d) + math.Log1p(math.Exp(-math.Abs(lse-d)))
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

// terminalSet is syntheticSet with falls: every third episode ends early in
// a terminal transition (s' absorbing), the others in a timeout (s' a real
// successor), and every episode's last s' is not the next row's s.
func terminalSet(n int, seed uint64) (*dataset.Offline, []float32) {
	o, reward, _ := syntheticSet(n, seed)
	for i := range n {
		step, episode := i%50, i/50
		o.Timeout[i] = step == 49 && episode%3 != 0
		o.Terminal[i] = step == 49 && episode%3 == 0
		if step < 49 && i+1 < n {
			copy(o.NextObs[2*i:2*i+2], o.Obs[2*i+2:2*i+4])
		}
	}
	return o, reward
}

// TestTerminalsAndTimeoutsRowByRow: a terminal transition does not
// bootstrap from V(s'), a timeout does; with AbsorbingFalls a terminal's
// next state is worth the set's lowest reward forever instead of 0. Checked
// row by row on a set that has both, against delta computed one transition
// at a time: in the whole-set weights (delta itself) and in the value step
// (its batch loss, recomputed from the same draws).
func TestTerminalsAndTimeoutsRowByRow(t *testing.T) {
	for _, absorbing := range []bool{false, true} {
		t.Run(fmt.Sprintf("absorbing falls %v", absorbing), func(t *testing.T) { checkTerminalsAndTimeouts(t, absorbing) })
	}
}

func checkTerminalsAndTimeouts(t *testing.T, absorbing bool) {
	data, reward := terminalSet(1500, 4)
	terminals, timeouts := 0, 0
	for i := range data.Terminal {
		terminals += b2i(data.Terminal[i])
		timeouts += b2i(data.Timeout[i])
	}
	cfg := smallConfig()
	cfg.AbsorbingFalls = absorbing
	fallValue := 0.0
	if absorbing {
		fallValue = float64(slices.Min(reward)) / (1 - cfg.Gamma)
	}
	v := newValue(t, data, reward, cfg)
	for range 30 {
		if _, err := v.Step(); err != nil {
			t.Fatal(err)
		}
	}
	// V must tell the rows apart for the check to bite: at a row where
	// V(s') is 0 a wrong mask would go unnoticed.
	_ = weights(t, v)
	want := directDelta(v, data, reward, cfg.Gamma, fallValue)
	checked := 0
	for i, got := range v.Delta() {
		if data.Terminal[i] || data.Timeout[i] {
			checked++
		}
		if math.Abs(got-want[i]) > 1e-5*max(1, math.Abs(want[i])) {
			t.Fatalf("row %d (terminal %v, timeout %v): delta %g, one transition at a time %g",
				i, data.Terminal[i], data.Timeout[i], got, want[i])
		}
	}
	t.Logf("weight pass: delta of %d rows (%d terminals, %d timeouts) matches", len(want), terminals, timeouts)

	// The value step: replay its draws with a generator in the same state.
	src := rand.NewPCG(3, 4)
	v2 := newValueFrom(t, data, reward, cfg, src)
	snapshot, _ := src.MarshalBinary()
	var replay rand.PCG
	_ = replay.UnmarshalBinary(snapshot)
	draws := rand.New(&replay)
	rows := make([]int, cfg.Batch)
	for k := range rows {
		rows[k] = draws.IntN(data.Len())
	}
	starts := data.InitialStates()
	init := make([]int, cfg.InitBatch)
	for k := range init {
		init[k] = starts[draws.IntN(len(starts))]
	}
	all := directDelta(v2, data, reward, cfg.Gamma, fallValue)
	batch := make([]float64, len(rows))
	for k, i := range rows {
		batch[k] = all[i]
	}
	var tape nn.Tape[float32]
	mean0 := 0.0
	for _, i := range init {
		mean0 += float64(v2.V.Net.Forward(&tape, data.Obs[2*i:2*i+2], 1)[0]) / float64(len(init))
	}
	wantLoss := (1-cfg.Gamma)*mean0 + nn.LogMeanExp(batch)
	loss, err := v2.Step()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("value step: batch loss %.6f, recomputed %.6f (%d of the batch's rows end an episode)", loss, wantLoss, endRows(data, rows))
	if math.Abs(loss-wantLoss) > 1e-5*max(1, math.Abs(wantLoss)) {
		t.Fatalf("value step loss %g, recomputed from its draws %g", loss, wantLoss)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func endRows(data *dataset.Offline, rows []int) int {
	n := 0
	for _, i := range rows {
		n += b2i(data.Terminal[i] || data.Timeout[i])
	}
	return n
}

// TestValueFindsTheExpert runs value steps and weight passes on the
// synthetic set: the weights must move onto the expert's transitions
// (which the learner cannot see).
func TestValueFindsTheExpert(t *testing.T) {
	data, reward, isExpert := syntheticSet(8000, 5)
	v := newValue(t, data, reward, smallConfig())
	var w []float64
	for k := range 800 {
		if _, err := v.Step(); err != nil {
			t.Fatal(err)
		}
		if k%200 == 199 {
			w = weights(t, v)
			mass, err := ExpertMass(w, isExpert)
			if err != nil {
				t.Fatal(err)
			}
			st := Summarise(w)
			t.Logf("step %d: ESS %.0f of %d, max w %.2e, KL %.3f, expert mass %.3f", k+1, st.ESS, len(w), st.Max, st.KL, mass)
		}
	}
	if mass, _ := ExpertMass(w, isExpert); mass < 0.5 {
		t.Errorf("expert mass %.3f, want >= 0.5 (base rate 0.2)", mass)
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

func TestNewValueRejectsBadInput(t *testing.T) {
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
		edit   func(*ValueConfig)
		check  func(error) bool
	}{
		{"short reward", data, reward[:99], nil, func(err error) bool { return errors.Is(err, ErrRewardLength) }},
		{"NaN reward", data, nanReward, nil, func(err error) bool { return errors.As(err, &nonFinite) && nonFinite.Field == "reward" }},
		{"no reward", data, nil, nil, func(err error) bool { return errors.Is(err, ErrNoReward) }},
		{"Inf observation", &nanObs, reward, nil, func(err error) bool { return errors.As(err, &nonFinite) && nonFinite.Field == "observations" }},
		{"no initial state", &noStart, reward, nil, func(err error) bool { return errors.Is(err, dataset.ErrNoInitialState) }},
		{"gamma 1", data, reward, func(c *ValueConfig) { c.Gamma = 1 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"zero batch", data, reward, func(c *ValueConfig) { c.Batch = 0 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"negative latent", data, reward, func(c *ValueConfig) { c.Latent = -1 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"negative ESS share", data, reward, func(c *ValueConfig) { c.MinESSShare = -0.1 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"ESS share over 1", data, reward, func(c *ValueConfig) { c.MinESSShare = 1.5 }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"NaN ESS share", data, reward, func(c *ValueConfig) { c.MinESSShare = math.NaN() }, func(err error) bool { return errors.Is(err, ErrConfig) }},
		{"zero-width layer", data, reward, func(c *ValueConfig) { c.Hidden = []int{0} }, func(err error) bool { return err != nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			v, err := NewValue(tc.data, cfg, rand.New(rand.NewPCG(1, 1)))
			if err == nil && tc.reward != nil {
				err = v.SetReward(tc.reward)
			}
			if err == nil {
				_, err = v.Step()
			}
			t.Logf("error: %v", err)
			if err == nil || !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestDivergenceIsReported: a value network whose outputs are not finite
// makes weights that are no distribution, and CheckWeights says so.
func TestDivergenceIsReported(t *testing.T) {
	data, reward, _ := syntheticSet(300, 11)
	v := newValue(t, data, reward, smallConfig())
	if err := CheckWeights(weights(t, v)); err != nil {
		t.Fatalf("fresh weights: %v", err)
	}
	for i := range v.V.Net.Params() {
		v.V.Net.Params()[i] = float32(math.NaN())
	}
	if err := CheckWeights(weights(t, v)); !errors.Is(err, ErrDiverged) {
		t.Fatalf("error %v, want ErrDiverged", err)
	}
}

func TestPolyakAndEstimates(t *testing.T) {
	p := Polyak{MinAlpha: 0.25}
	for k, w := range [][]float64{{1, 0}, {0, 1}, {0, 1}, {0, 1}, {0, 1}} {
		p.Add(w)
		t.Logf("after %d: %v", k+1, p.W)
	}
	// alphas 1, 1/2, 1/3, 1/4, then floored at 1/4: w0 = 1 * 1/2 * 2/3 * 3/4 * 3/4.
	if want := 0.5 * 2.0 / 3 * 0.75 * 0.75; math.Abs(p.W[0]-want) > 1e-15 || math.Abs(p.W[0]+p.W[1]-1) > 1e-15 {
		t.Errorf("Polyak average %v, want [%v, %v]", p.W, want, 1-want)
	}
	w := []float64{0.5, 0.25, 0.25, 0}
	if got, want := Constraint(w, []float32{1, 2, 0, 5}), math.Log(4)+0.5*math.Log(0.5)+0.5*math.Log(0.25)-1; math.Abs(got-want) > 1e-12 {
		t.Errorf("constraint %v, want %v", got, want)
	}
	psi := SuccessorFeatures(w, []float32{1, 0, 0, 1, 2, 2, 9, 9}, 2)
	if !slices.Equal(psi, []float32{1, 0.75}) {
		t.Errorf("successor features %v, want [1 0.75]", psi)
	}
}

// TestKthLargest checks the quickselect against a sort, on values with and
// without ties, in every order, for every k.
func TestKthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]float64, 101)
	for i := range random {
		random[i] = rng.NormFloat64()
	}
	ties := make([]float64, 64)
	for i := range ties {
		ties[i] = float64(rng.IntN(4))
	}
	ascending := make([]float64, 40)
	for i := range ascending {
		ascending[i] = float64(i)
	}
	descending := slices.Clone(ascending)
	slices.Reverse(descending)
	for _, tc := range []struct {
		name string
		x    []float64
	}{
		{"one", []float64{2.5}}, {"two", []float64{1, 3}}, {"random", random}, {"ties", ties},
		{"all equal", []float64{7, 7, 7, 7, 7}}, {"ascending", ascending}, {"descending", descending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := slices.Clone(tc.x)
			slices.Sort(sorted)
			for k := 1; k <= len(tc.x); k++ {
				if got, want := kthLargest(slices.Clone(tc.x), k), sorted[len(sorted)-k]; got != want {
					t.Fatalf("k = %d: %v, want %v", k, got, want)
				}
			}
		})
	}
}

// TestMinESSShareCapsTheWeights: one transition whose reward towers over
// the rest takes nearly all the weight of the paper's softmax; with
// MinESSShare the pass caps delta at its k-th largest value (k = ceil(share
// N)), so that no weight exceeds 1/k and the ESS is at least k, and the
// weights are the softmax of the capped residuals (checked against a
// direct computation: rows under the cap keep their ratios).
func TestMinESSShareCapsTheWeights(t *testing.T) {
	data, reward, _ := syntheticSet(1000, 5)
	reward = slices.Clone(reward)
	reward[7] = 60
	paper := newValue(t, data, reward, smallConfig())
	if s := Summarise(weights(t, paper)); s.ESS > 1.01 || s.Max < 0.99 {
		t.Fatalf("the paper's softmax: ESS %.3f, max %.3f; want the outlier to hold the weight", s.ESS, s.Max)
	}
	for _, share := range []float64{0.001, 0.01, 0.1, 1} {
		cfg := smallConfig()
		cfg.MinESSShare = share
		v := newValue(t, data, reward, cfg)
		w := slices.Clone(weights(t, v))
		k := int(math.Ceil(share * float64(data.Len())))
		s := Summarise(w)
		if s.ESS < float64(k)*(1-1e-9) || s.Max > (1+1e-9)/float64(k) {
			t.Fatalf("share %v: ESS %.1f, max %.5f; want ESS >= %d, max <= 1/%d", share, s.ESS, s.Max, k, k)
		}
		delta := directDelta(v, data, reward, 0.99, 0)
		top := slices.Clone(delta)
		slices.Sort(top)
		capAt := top[len(top)-k]
		for i := range delta {
			delta[i] = min(delta[i], capAt)
		}
		want := make([]float64, len(delta))
		nn.Softmax(delta, want)
		for i := range w {
			if math.Abs(w[i]-want[i]) > 1e-5*want[i] {
				t.Fatalf("share %v: w[%d] = %g, softmax of the capped residuals %g", share, i, w[i], want[i])
			}
		}
	}
}
