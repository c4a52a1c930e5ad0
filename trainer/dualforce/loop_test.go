package dualforce

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// scriptedSkill is a value learner, policy and encoder whose weights are a
// fixed vector: enough to check what the loop computes and stores around
// them.
type scriptedSkill struct {
	w       []float64
	reward  []float32
	z       float32
	err     error
	latents [][]float32
	steps   int
}

func (s *scriptedSkill) SetReward(r []float32) error { s.reward = slices.Clone(r); return nil }
func (s *scriptedSkill) SetLatent(z []float32) error {
	s.latents = append(s.latents, slices.Clone(z))
	return nil
}
func (s *scriptedSkill) Step() (float64, error)      { s.steps++; return 0, nil }
func (s *scriptedSkill) Weights() ([]float64, error) { return s.w, s.err }
func (s *scriptedSkill) Encode(r []float32) ([]float32, error) {
	s.z++
	return []float32{s.z, r[0]}, nil
}

// scriptedPolicy records its weights and, for rehearsal steps, the latent
// and rows of each.
type scriptedPolicy struct {
	w         []float64
	tilt      []float64 // when set, Resample draws by w_i tilt_i, as a tilted wbc.Learner does
	z         []float32
	rows      []int32
	rehearsed []rehearsal
}

type rehearsal struct {
	z    []float32
	rows []int32
}

func (p *scriptedPolicy) SetLatent(z []float32) error { p.z = slices.Clone(z); return nil }
func (p *scriptedPolicy) SetWeights(w []float64) error {
	p.w, p.rows = slices.Clone(w), nil
	return nil
}
func (p *scriptedPolicy) SetRows(rows []int32) error { p.rows = rows; return nil }
func (p *scriptedPolicy) Resample(k int) []int32 {
	cdf, sum := make([]float64, len(p.w)), 0.0
	for i, x := range p.w {
		if p.tilt != nil {
			x *= p.tilt[i]
		}
		sum += x
		cdf[i] = sum
	}
	return wbc.ResampleCDF(cdf, k)
}
func (p *scriptedPolicy) Step() float64 {
	if p.rows != nil {
		p.rehearsed = append(p.rehearsed, rehearsal{z: p.z, rows: p.rows})
	}
	return 0
}

func scriptedLoop(t *testing.T, cfg Config, w [][]float64, in Inputs) (*Loop, []*scriptedSkill, []*scriptedPolicy) {
	t.Helper()
	var skills []Skill
	var ss []*scriptedSkill
	var ps []*scriptedPolicy
	for i := range w {
		s, p := &scriptedSkill{w: w[i]}, &scriptedPolicy{}
		ss, ps = append(ss, s), append(ps, p)
		skills = append(skills, Skill{Value: s, Policy: p, Encoder: s})
	}
	l, err := New(cfg, in, skills, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return l, ss, ps
}

// TestIterateFollowsAlgorithm1 checks one iteration against the algorithm
// computed by hand on three transitions with one-dimensional features.
func TestIterateFollowsAlgorithm1(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	w := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	cfg := DefaultConfig()
	cfg.L0, cfg.Eps, cfg.MuLR, cfg.ValueSteps, cfg.PolicySteps = 4, 0.5, 0.3, 2, 1
	l, ss, ps := scriptedLoop(t, cfg, w, in)
	// Replace the Dirichlet start by known weights: psi = (0.5, 1, 1.5).
	start := [][]float64{{0.5, 0.5, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0, 0.5, 0.5}}
	for i := range start {
		copy(l.Weights(i), start[i])
	}
	m, err := l.Iterate()
	if err != nil {
		t.Fatal(err)
	}
	psi0 := []float64{-0.5, 1.0 / 3, 1}
	// Nearest: 0 -> 1 (0.833), 1 -> 2 (0.667), 2 -> 1 (0.667).
	wantJ, wantL := []int{1, 2, 1}, []float64{psi0[1] - psi0[0], psi0[2] - psi0[1], psi0[2] - psi0[1]}
	for i := range 3 {
		if m.Nearest[i] != wantJ[i] || math.Abs(m.Distance[i]-wantL[i]) > 1e-6 {
			t.Errorf("skill %d: nearest %d at %g, want %d at %g", i, m.Nearest[i], m.Distance[i], wantJ[i], wantL[i])
		}
		// R = (1 - s) beta + s rE with s = sigmoid(0) = 1/2 and
		// beta(s) = (1 - (l/l0)^3) phi(s) (psi_i - psi_j*).
		g := (1 - math.Pow(wantL[i]/4, 3)) * (psi0[i] - psi0[wantJ[i]])
		for r := range 3 {
			want := 0.5*float64(in.Phi[r])*g + 0.5*float64(in.RE[r])
			if got := float64(ss[i].reward[r]); math.Abs(got-want) > 1e-6 {
				t.Errorf("skill %d: R(s_%d) = %g, want %g", i, r, got, want)
			}
		}
		if ss[i].steps != 2 {
			t.Errorf("skill %d: %d value steps, want 2", i, ss[i].steps)
		}
		// alpha_1 = 1: the new weights replace the start.
		if !slices.Equal(l.Weights(i), w[i]) || !slices.Equal(ps[i].w, w[i]) {
			t.Errorf("skill %d: weights %v, policy fitted to %v, want %v", i, l.Weights(i), ps[i].w, w[i])
		}
		// phi = log N + sum w (log w - rE) = log 3 - rE(s_i) for one-hot w.
		wantPhi := math.Log(3) - float64(in.RE[i])
		if math.Abs(m.Constraint[i]-wantPhi) > 1e-6 {
			t.Errorf("skill %d: phi %g, want %g", i, m.Constraint[i], wantPhi)
		}
		wantMu := -0.3 * 0.25 * (0.5 - wantPhi)
		if math.Abs(m.Sigma[i]-skillset.Sigmoid(wantMu)) > 1e-12 {
			t.Errorf("skill %d: sigma %g after the step, want %g", i, m.Sigma[i], skillset.Sigmoid(wantMu))
		}
		lat := l.Latents()[i]
		wantZ := []float32{1, ss[i].reward[0]}
		if lat.Skill != i || lat.Iteration != 1 || lat.Sigma != 0.5 || lat.Constraint != m.Constraint[i] ||
			!slices.Equal(lat.Psi, []float32{in.Phi[i]}) || !slices.Equal(lat.Z, wantZ) {
			t.Errorf("skill %d: stored %+v, want skill %d, iteration 1, sigma 0.5, phi %g, psi [%g], z %v",
				i, lat, i, m.Constraint[i], in.Phi[i], wantZ)
		}
		if len(ss[i].latents) != 1 || !slices.Equal(ss[i].latents[0], wantZ) {
			t.Errorf("skill %d: value conditioned on %v, want %v", i, ss[i].latents, wantZ)
		}
	}
	if want := Objective(wantL, 4); math.Abs(m.Objective-want) > 1e-6 {
		t.Errorf("objective %g, want %g", m.Objective, want)
	}
	if m.ESS[0] != 1 || m.MaxW[0] != 1 {
		t.Errorf("ESS %g, max w %g of one-hot weights, want 1 and 1", m.ESS[0], m.MaxW[0])
	}

	// The second iteration stores three more latents under iteration 2,
	// with the sigma its rewards used.
	sigmaBefore := slices.Clone(m.Sigma)
	if _, err := l.Iterate(); err != nil {
		t.Fatal(err)
	}
	if got := len(l.Latents()); got != 6 {
		t.Fatalf("%d latents after two iterations, want 6", got)
	}
	for i, lat := range l.Latents()[3:] {
		if lat.Skill != i || lat.Iteration != 2 || lat.Sigma != sigmaBefore[i] {
			t.Errorf("second iteration, skill %d: stored skill %d iteration %d sigma %g, want sigma %g",
				i, lat.Skill, lat.Iteration, lat.Sigma, sigmaBefore[i])
		}
	}
}

func TestDiversityOffUsesTheImitationRewardOnly(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	cfg := DefaultConfig()
	cfg.DiversityOff = true
	l, ss, _ := scriptedLoop(t, cfg, [][]float64{{1, 0, 0}, {0, 1, 0}}, in)
	m, err := l.Iterate()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ss {
		for r := range 3 {
			if ss[i].reward[r] != in.RE[r] {
				t.Errorf("skill %d: R = %v, want r_E = %v", i, ss[i].reward, in.RE)
				break
			}
		}
		if m.Sigma[i] != 1 || l.Latents()[i].Sigma != 1 {
			t.Errorf("skill %d: sigma %g (stored %g), want 1", i, m.Sigma[i], l.Latents()[i].Sigma)
		}
	}
}

// With MuKP the imitation share answers the latest constraint estimate at once: after an
// iteration with phi_i known, sigma_i = sigmoid(clamp(mu_i + MuKP (phi_i - eps))), and the next
// iteration's rewards (and stored latents) use that share. A skill over its bound gets more
// imitation than the plain multiplier gives, one under it less.
func TestProportionalMultiplierAnswersTheConstraint(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	w := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	cfg := DefaultConfig()
	cfg.Eps, cfg.MuLR, cfg.MuKP = 0.5, 0.3, 2
	l, _, _ := scriptedLoop(t, cfg, w, in)
	plain, _, _ := scriptedLoop(t, func() Config { c := cfg; c.MuKP = 0; return c }(), w, in)
	m, err := l.Iterate()
	if err != nil {
		t.Fatal(err)
	}
	mp, err := plain.Iterate()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		phi := math.Log(3) - float64(in.RE[i]) // one-hot weights
		mu := -0.3 * 0.25 * (0.5 - phi)
		want := skillset.Sigmoid(min(max(mu+2*(phi-0.5), -skillset.MuBound), skillset.MuBound))
		if math.Abs(m.Sigma[i]-want) > 1e-12 {
			t.Errorf("skill %d (phi %.3f): sigma %g, want %g", i, phi, m.Sigma[i], want)
		}
		if over := phi > 0.5; (m.Sigma[i] > mp.Sigma[i]) != over {
			t.Errorf("skill %d (phi %.3f, eps 0.5): sigma %g with the proportional term, %g without", i, phi, m.Sigma[i], mp.Sigma[i])
		}
	}
	if _, err := l.Iterate(); err != nil {
		t.Fatal(err)
	}
	for i, lat := range l.Latents()[3:] {
		if lat.Sigma != m.Sigma[i] {
			t.Errorf("skill %d: second iteration stored sigma %g, want %g", i, lat.Sigma, m.Sigma[i])
		}
	}
}

func TestIterateReportsTheFailingSkill(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	l, ss, _ := scriptedLoop(t, DefaultConfig(), [][]float64{{1, 0, 0}, {0, 1, 0}}, in)
	broken := errors.New("value diverged")
	ss[1].err = broken
	if _, err := l.Iterate(); !errors.Is(err, broken) {
		t.Fatalf("err %v, want the skill's error", err)
	}
	if len(l.Latents()) != 0 {
		t.Errorf("%d latents stored by a failed iteration, want 0", len(l.Latents()))
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	good := func() (Config, Inputs, int) {
		return DefaultConfig(), Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}, 3
	}
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		change func(*Config, *Inputs, *int)
		want   error
	}{
		{"one skill", func(_ *Config, _ *Inputs, n *int) { *n = 1 }, ErrConfig},
		{"l0 zero", func(c *Config, _ *Inputs, _ *int) { c.L0 = 0 }, ErrConfig},
		{"l0 NaN", func(c *Config, _ *Inputs, _ *int) { c.L0 = math.NaN() }, ErrConfig},
		{"Polyak floor zero", func(c *Config, _ *Inputs, _ *int) { c.MinAlpha = 0 }, ErrConfig},
		{"multiplier start out of bounds", func(c *Config, _ *Inputs, _ *int) { c.MuInit = 4 }, ErrConfig},
		{"negative proportional gain", func(c *Config, _ *Inputs, _ *int) { c.MuKP = -1 }, ErrConfig},
		{"NaN proportional gain", func(c *Config, _ *Inputs, _ *int) { c.MuKP = math.NaN() }, ErrConfig},
		{"negative beta clip", func(c *Config, _ *Inputs, _ *int) { c.BetaClip = -1 }, ErrConfig},
		{"NaN beta clip", func(c *Config, _ *Inputs, _ *int) { c.BetaClip = math.NaN() }, ErrConfig},
		{"negative steps", func(c *Config, _ *Inputs, _ *int) { c.ValueSteps = -1 }, ErrConfig},
		{"features of another length", func(_ *Config, in *Inputs, _ *int) { in.Phi = in.Phi[:2] }, ErrConfig},
		{"no transitions", func(_ *Config, in *Inputs, _ *int) { in.Phi, in.RE = nil, nil }, ErrConfig},
		{"NaN feature", func(_ *Config, in *Inputs, _ *int) { in.Phi[1] = nan }, new(dataset.NonFiniteError)},
		{"infinite reward", func(_ *Config, in *Inputs, _ *int) { in.RE[2] = float32(math.Inf(-1)) }, new(dataset.NonFiniteError)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, in, n := good()
			tc.change(&cfg, &in, &n)
			skills := make([]Skill, n)
			_, err := New(cfg, in, skills, rand.New(rand.NewPCG(1, 1)))
			var nf *dataset.NonFiniteError
			switch {
			case errors.As(tc.want, &nf):
				if !errors.As(err, &nf) {
					t.Errorf("err %v, want a NonFiniteError", err)
				}
			case !errors.Is(err, tc.want):
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// With BetaClip the rewards the skills get hold the clipped VdW reward: a state whose feature
// lies far out (9 among -1 and zeros: mean 0.8, standard deviation 2.75) gets beta at the
// mean + 1 sd, a state inside keeps its own; without it the ratio stays the features' -9.
func TestBetaClipBoundsTheDiversityReward(t *testing.T) {
	phi := []float32{-1, 0, 0, 0, 0, 0, 0, 0, 0, 9}
	w := [][]float64{{1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}
	sd := math.Sqrt(8.2 - 0.8*0.8)
	for _, tc := range []struct {
		clip, ratio float64
	}{{0, -9}, {1, -(0.8 + sd)}} {
		in := Inputs{Phi: phi, PhiDim: 1, RE: make([]float32, len(phi))}
		cfg := DefaultConfig()
		cfg.BetaClip = tc.clip
		l, ss, _ := scriptedLoop(t, cfg, w, in)
		if _, err := l.Iterate(); err != nil {
			t.Fatal(err)
		}
		for i, s := range ss {
			if got := float64(s.reward[9] / s.reward[0]); math.Abs(got-tc.ratio) > 1e-4 {
				t.Errorf("clip %g, skill %d: R(far state) / R(phi -1) = %g, want %g (rewards %v)", tc.clip, i, got, tc.ratio, s.reward)
			}
		}
	}
}

// TestRehearsalKeepsAnEvenSpreadOfEarlierLatents: with rehearsal on, each
// iteration's extra policy steps take the kept snapshots in turn, each with
// the latent of its own iteration and rows of its weights; the kept
// iterations are the multiples of the stride, at most RehearsalKeep of
// them, so the whole run so far stays covered.
func TestRehearsalKeepsAnEvenSpreadOfEarlierLatents(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	cfg := DefaultConfig()
	cfg.RehearsalSteps, cfg.RehearsalRows, cfg.RehearsalKeep = 2, 8, 3
	l, _, ps := scriptedLoop(t, cfg, [][]float64{{1, 0, 0}, {0, 0.25, 0.75}}, in)
	var kept []int // skill 1's kept iterations before the current one
	for k := 1; k <= 10; k++ {
		before := len(ps[1].rehearsed)
		if _, err := l.Iterate(); err != nil {
			t.Fatal(err)
		}
		steps := ps[1].rehearsed[before:]
		if want := min(len(kept), 1) * cfg.RehearsalSteps; len(steps) != want {
			t.Fatalf("iteration %d: %d rehearsal steps, want %d", k, len(steps), want)
		}
		for r, step := range steps {
			// The scripted encoder's latents are (iteration, r_0).
			want := kept[((k-1)*cfg.RehearsalSteps+r)%len(kept)]
			if int(step.z[0]) != want || len(step.rows) != cfg.RehearsalRows {
				t.Errorf("iteration %d, step %d: latent of iteration %v with %d rows, want iteration %d's with %d",
					k, r, step.z[0], len(step.rows), want, cfg.RehearsalRows)
			}
			// Polyak's first step (alpha 1) replaces the Dirichlet start by
			// skill 1's weights, which are 0 on row 0 and 1:3 on rows 1 and 2.
			counts := make([]int, 3)
			for _, row := range step.rows {
				counts[row]++
			}
			if !slices.Equal(counts, []int{0, 2, 6}) {
				t.Errorf("iteration %d: rehearsal of iteration %d draws rows 0, 1, 2 %v times, want [0 2 6]", k, want, counts)
			}
		}
		kept = kept[:0]
		for _, snap := range l.State().Snapshots {
			if snap.Skill == 1 {
				kept = append(kept, snap.Iteration)
			}
		}
		// Keeping 3: stride 1 up to iteration 3, 2 up to 7, then 4.
		want := [][]int{{1}, {1, 2}, {1, 2, 3}, {2, 4}, {2, 4}, {2, 4, 6}, {2, 4, 6}, {4, 8}, {4, 8}, {4, 8}}[k-1]
		if !slices.Equal(kept, want) {
			t.Fatalf("after iteration %d skill 1 keeps iterations %v, want %v", k, kept, want)
		}
	}
	if got := len(ps[0].rehearsed); got != 9*cfg.RehearsalSteps {
		t.Errorf("skill 0 took %d rehearsal steps in 10 iterations, want %d", got, 9*cfg.RehearsalSteps)
	}

	cfg.RehearsalSteps = 0
	off, _, offPolicies := scriptedLoop(t, cfg, [][]float64{{1, 0, 0}, {0, 0.25, 0.75}}, in)
	for range 5 {
		if _, err := off.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(offPolicies[0].rehearsed); n != 0 || len(off.State().Snapshots) != 0 {
		t.Errorf("rehearsal off: %d rehearsal steps, %d snapshots", n, len(off.State().Snapshots))
	}
}

// TestRehearsalSamplesThePolicysDraws: a snapshot's rows are a sample of
// what the skill's policy drew from (Policy.Resample), not of the skill's
// weights, so a policy whose draws are tilted rehearses the tilted draws.
func TestRehearsalSamplesThePolicysDraws(t *testing.T) {
	in := Inputs{Phi: []float32{-1, 0, 2}, PhiDim: 1, RE: []float32{0.5, -1, 1}}
	cfg := DefaultConfig()
	cfg.RehearsalSteps, cfg.RehearsalRows, cfg.RehearsalKeep = 1, 8, 3
	l, _, ps := scriptedLoop(t, cfg, [][]float64{{1, 0, 0}, {0, 0.25, 0.75}}, in)
	ps[1].tilt = []float64{1, 3, 1} // skill 1 draws rows 1 and 2 alike
	for range 2 {
		if _, err := l.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	counts := make([]int, 3)
	for _, row := range ps[1].rehearsed[0].rows {
		counts[row]++
	}
	if !slices.Equal(counts, []int{0, 4, 4}) {
		t.Errorf("skill 1 rehearses rows 0, 1, 2 %v times, want [0 4 4] (its tilted draws; its weights would give [0 2 6])", counts)
	}
}
