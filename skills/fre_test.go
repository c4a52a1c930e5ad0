package skills

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// freSizes are the sizes of a test encoder.
type freSizes struct {
	state, stateEmbed, bins, rewardEmbed, ffn, blocks, heads, latent int
}

// defaultFRESizes are fre.md's: a 64+64 token, 2 blocks of width 128 with 2
// heads and FFN 256, latent 128.
func defaultFRESizes(state int) freSizes {
	return freSizes{state: state, stateEmbed: 64, bins: 32, rewardEmbed: 64, ffn: 256, blocks: 2, heads: 2, latent: 128}
}

// randomFRENet is an encoder of the given sizes with xavier-uniform matrices
// and small random biases and LayerNorm parameters (so every parameter
// matters), reward scale 2.
func randomFRENet(rng *rand.Rand, s freSizes) *FRENet {
	w := s.stateEmbed + s.rewardEmbed
	net := &FRENet{Heads: s.heads, Arrays: map[string]Array{}}
	put := func(name string, scale float32, shape ...int) {
		a := Array{Shape: shape, Data: make([]float32, numElements(shape))}
		if len(shape) == 2 {
			scale = float32(math.Sqrt(6 / float64(shape[0]+shape[1])))
		}
		for i := range a.Data {
			a.Data[i] = (2*rng.Float32() - 1) * scale
		}
		net.Arrays[name] = a
	}
	gamma := func(name string, n int) {
		put(name, 0.2, n)
		for i := range net.Arrays[name].Data {
			net.Arrays[name].Data[i] += 1
		}
	}
	put(FREStateW, 0, s.state, s.stateEmbed)
	put(FREStateB, 0.1, s.stateEmbed)
	put(FRERewardEmbed, 1, s.bins, s.rewardEmbed)
	for l := range s.blocks {
		b := func(part string) string { return FREBlockArray(l, part) }
		gamma(b("ln1/gamma"), w)
		put(b("ln1/beta"), 0.1, w)
		for _, p := range []string{"q", "k", "v", "o"} {
			put(b("attn/w"+p), 0, w, w)
			put(b("attn/b"+p), 0.1, w)
		}
		gamma(b("ln2/gamma"), w)
		put(b("ln2/beta"), 0.1, w)
		put(b("ffn/w1"), 0, w, s.ffn)
		put(b("ffn/b1"), 0.1, s.ffn)
		put(b("ffn/w2"), 0, s.ffn, w)
		put(b("ffn/b2"), 0.1, w)
	}
	gamma(FREFinalGamma, w)
	put(FREFinalBeta, 0.1, w)
	put(FREMeanW, 0, w, s.latent)
	put(FREMeanB, 0.1, s.latent)
	net.Arrays[FRERewardScale] = Array{Shape: []int{1}, Data: []float32{2}}
	return net
}

// referenceFRE encodes one set in float64 with textbook loops straight from
// the conventions in fre.go: the independent reference the float32 encoder
// is checked against.
func referenceFRE(net *FRENet, states [][]float32, rewards []float32) []float64 {
	get := func(name string) ([]float64, []int) {
		a := net.Arrays[name]
		out := make([]float64, len(a.Data))
		for i, v := range a.Data {
			out[i] = float64(v)
		}
		return out, a.Shape
	}
	dense := func(x [][]float64, wName, bName string) [][]float64 {
		w, shape := get(wName)
		b, _ := get(bName)
		in, out := shape[0], shape[1]
		y := make([][]float64, len(x))
		for t := range x {
			y[t] = make([]float64, out)
			for j := range out {
				s := b[j]
				for i := range in {
					s += x[t][i] * w[i*out+j]
				}
				y[t][j] = s
			}
		}
		return y
	}
	layerNorm := func(x [][]float64, gName, bName string) [][]float64 {
		g, _ := get(gName)
		b, _ := get(bName)
		y := make([][]float64, len(x))
		for t, row := range x {
			var mean, variance float64
			for _, v := range row {
				mean += v
			}
			mean /= float64(len(row))
			for _, v := range row {
				variance += (v - mean) * (v - mean)
			}
			variance /= float64(len(row))
			y[t] = make([]float64, len(row))
			for i, v := range row {
				y[t][i] = (v-mean)/math.Sqrt(variance+1e-5)*g[i] + b[i]
			}
		}
		return y
	}
	embed, eshape := get(FRERewardEmbed)
	bins, de := eshape[0], eshape[1]
	scale := float64(net.Arrays[FRERewardScale].Data[0])
	s64 := make([][]float64, len(states))
	for t, s := range states {
		for _, v := range s {
			s64[t] = append(s64[t], float64(v))
		}
	}
	x := dense(s64, FREStateW, FREStateB)
	for t, r := range rewards {
		rn := math.Max(-1, math.Min(1, float64(r)/scale))
		bin := int(math.Max(0, math.Min(float64(bins-1), math.Floor((rn/2+0.5)*float64(bins)))))
		x[t] = append(x[t], embed[bin*de:(bin+1)*de]...)
	}
	w := len(x[0])
	dh := w / net.Heads
	for l := 0; ; l++ {
		if _, ok := net.Arrays[FREBlockArray(l, "ln1/gamma")]; !ok {
			break
		}
		b := func(part string) string { return FREBlockArray(l, part) }
		h := layerNorm(x, b("ln1/gamma"), b("ln1/beta"))
		q, k, v := dense(h, b("attn/wq"), b("attn/bq")), dense(h, b("attn/wk"), b("attn/bk")), dense(h, b("attn/wv"), b("attn/bv"))
		cat := make([][]float64, len(x))
		for i := range x {
			cat[i] = make([]float64, w)
			for head := range net.Heads {
				lo := head * dh
				scores := make([]float64, len(x))
				hi := math.Inf(-1)
				for j := range x {
					var s float64
					for c := lo; c < lo+dh; c++ {
						s += q[i][c] * k[j][c]
					}
					scores[j] = s / math.Sqrt(float64(dh))
					hi = math.Max(hi, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - hi)
					sum += scores[j]
				}
				for j := range x {
					for c := lo; c < lo+dh; c++ {
						cat[i][c] += scores[j] / sum * v[j][c]
					}
				}
			}
		}
		o := dense(cat, b("attn/wo"), b("attn/bo"))
		for i := range x {
			for c := range w {
				x[i][c] += o[i][c]
			}
		}
		h = layerNorm(x, b("ln2/gamma"), b("ln2/beta"))
		f := dense(h, b("ffn/w1"), b("ffn/b1"))
		for _, row := range f {
			for c, u := range row {
				row[c] = 0.5 * u * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(u+0.044715*u*u*u)))
			}
		}
		o = dense(f, b("ffn/w2"), b("ffn/b2"))
		for i := range x {
			for c := range w {
				x[i][c] += o[i][c]
			}
		}
	}
	h := layerNorm(x, FREFinalGamma, FREFinalBeta)
	pool := make([]float64, w)
	for _, row := range h {
		for c, v := range row {
			pool[c] += v / float64(len(h))
		}
	}
	return dense([][]float64{pool}, FREMeanW, FREMeanB)[0]
}

// freSet is n random standardised states with rewards spread over every bin
// (and beyond the reward scale, to exercise the clip).
func freSet(rng *rand.Rand, n, d int) (states, rewards []float32) {
	states = randomVec(rng, n*d)
	rewards = make([]float32, n)
	for i := range rewards {
		rewards[i] = 5 * (2*rng.Float32() - 1)
	}
	return states, rewards
}

func rowsOf(states []float32, d int, rows []int) [][]float32 {
	var out [][]float32
	for _, r := range rows {
		out = append(out, states[r*d:(r+1)*d])
	}
	return out
}

func maxRelErr(got []float32, want []float64) float64 {
	var worst float64
	for i, w := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-w)/(1+math.Abs(w)))
	}
	return worst
}

func TestEncoderMatchesFloat64Reference(t *testing.T) {
	kernels := map[string]matmul{"default": defaultMatmul, "go": matmulGo}
	sizes := map[string]freSizes{
		"fre.md defaults":          defaultFRESizes(48),
		"small, 4 heads, 3 blocks": {state: 7, stateEmbed: 8, bins: 16, rewardEmbed: 24, ffn: 40, blocks: 3, heads: 4, latent: 5},
		"one head":                 {state: 171, stateEmbed: 16, bins: 32, rewardEmbed: 16, ffn: 64, blocks: 1, heads: 1, latent: 8},
	}
	for name, s := range sizes {
		rng := rand.New(rand.NewPCG(1, uint64(s.state)))
		net := randomFRENet(rng, s)
		for kname, mm := range kernels {
			t.Run(name+"/"+kname, func(t *testing.T) {
				enc, err := NewEncoder(net, 32)
				if err != nil {
					t.Fatal(err)
				}
				enc.mm = mm
				for _, n := range []int{1, 5, 32} {
					states, rewards := freSet(rng, n, s.state)
					plan, _ := BlockPlan(n, 1)
					z := make([]float32, s.latent)
					if err := enc.EncodeReward(states, rewards, plan, z); err != nil {
						t.Fatal(err)
					}
					want := referenceFRE(net, rowsOf(states, s.state, plan.Rows), rewards)
					if e := maxRelErr(z, want); e > 1e-5 {
						t.Errorf("%d pairs: max error %.3g against float64, want <= 1e-5", n, e)
					} else {
						t.Logf("%d pairs: max error %.3g against float64", n, e)
					}
				}
			})
		}
	}
}

// Algorithm 1: the latent of a plan is the mean of its subsets' latents, the
// subsets are encoded independently of each other, and reordering the pairs
// of a subset does not change its latent.
func TestEncodeRewardIsAMeanOverPermutationInvariantSubsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	s := defaultFRESizes(12)
	net := randomFRENet(rng, s)
	enc, err := NewEncoder(net, 32)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	states, rewards := freSet(rng, n, s.state)
	plan, err := RandomPlan(rng.IntN, n, 4, 32)
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float32, s.latent)
	if err := enc.EncodeReward(states, rewards, plan, z); err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, s.latent)
	for j := range plan.Subsets() {
		rows := plan.Rows[j*plan.T : (j+1)*plan.T]
		var sub []float32
		for _, r := range rows {
			sub = append(sub, rewards[r])
		}
		for i, v := range referenceFRE(net, rowsOf(states, s.state, rows), sub) {
			mean[i] += v / float64(plan.Subsets())
		}
	}
	if e := maxRelErr(z, mean); e > 1e-5 {
		t.Errorf("plan latent is %.3g away from the mean of its subsets' latents", e)
	}

	one := SubsetPlan{Rows: slices.Clone(plan.Rows[:32]), T: 32}
	base := make([]float32, s.latent)
	if err := enc.EncodeReward(states, rewards, one, base); err != nil {
		t.Fatal(err)
	}
	perm := make([]float32, s.latent)
	var worst float64
	for range 10 {
		rng.Shuffle(len(one.Rows), func(i, j int) { one.Rows[i], one.Rows[j] = one.Rows[j], one.Rows[i] })
		if err := enc.EncodeReward(states, rewards, one, perm); err != nil {
			t.Fatal(err)
		}
		for i := range base {
			worst = math.Max(worst, math.Abs(float64(base[i]-perm[i])))
		}
	}
	t.Logf("largest change under 10 permutations: %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("permuting the pairs moves z by %.3g", worst)
	}
	// The reward matters: flipping its sign moves z far more than rounding does.
	for i := range rewards {
		rewards[i] = -rewards[i]
	}
	if err := enc.EncodeReward(states, rewards, one, perm); err != nil {
		t.Fatal(err)
	}
	var moved float64
	for i := range base {
		moved = math.Max(moved, math.Abs(float64(base[i]-perm[i])))
	}
	if moved < 1e-2 {
		t.Errorf("negating the reward moves z by only %.3g", moved)
	}
}

func TestRewardBin(t *testing.T) {
	tests := []struct {
		r, scale float32
		want     int
	}{
		{0, 1, 16}, {-1, 1, 0}, {1, 1, 31}, {-1e30, 1, 0}, {1e30, 1, 31},
		{-0.001, 1, 15}, {0.999, 1, 31}, {0.9374, 1, 30}, {2, 4, 24}, {-4, 4, 0},
		{float32(math.Inf(1)), 1, 31}, {float32(math.Inf(-1)), 1, 0},
	}
	for _, tt := range tests {
		if got := RewardBin(tt.r, tt.scale, 32); got != tt.want {
			t.Errorf("RewardBin(%v, %v, 32) = %d, want %d", tt.r, tt.scale, got, tt.want)
		}
	}
}

func TestEncodeRewardRefusesBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	s := freSizes{state: 6, stateEmbed: 8, bins: 8, rewardEmbed: 8, ffn: 16, blocks: 1, heads: 2, latent: 4}
	enc, err := NewEncoder(randomFRENet(rng, s), 8)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	states, rewards := freSet(rng, n, s.state)
	plan, _ := RandomPlan(rng.IntN, n, 2, 4)
	nanAt := func(x []float32, i int) []float32 { x = slices.Clone(x); x[i] = float32(math.NaN()); return x }
	infAt := func(x []float32, i int) []float32 { x = slices.Clone(x); x[i] = float32(math.Inf(-1)); return x }
	tests := []struct {
		name            string
		states, rewards []float32
		plan            SubsetPlan
		z               []float32
		want            error
	}{
		{"NaN state", nanAt(states, plan.Rows[3]*s.state+2), rewards, plan, make([]float32, 4), ErrNonFiniteState},
		{"Inf state", infAt(states, plan.Rows[0]*s.state), rewards, plan, make([]float32, 4), ErrNonFiniteState},
		{"NaN reward", states, nanAt(rewards, plan.Rows[5]), plan, make([]float32, 4), ErrNonFiniteReward},
		{"Inf reward", states, infAt(rewards, plan.Rows[7]), plan, make([]float32, 4), ErrNonFiniteReward},
		{"states one column short", states[:n*(s.state-1)], rewards, plan, make([]float32, 4), ErrDimMismatch},
		{"one reward missing", states, rewards[:n-1], plan, make([]float32, 4), ErrDimMismatch},
		{"z too long", states, rewards, plan, make([]float32, 5), ErrDimMismatch},
		{"row out of range", states, rewards, SubsetPlan{Rows: []int{0, n}, T: 2}, make([]float32, 4), ErrDimMismatch},
		{"negative row", states, rewards, SubsetPlan{Rows: []int{-1}, T: 1}, make([]float32, 4), ErrDimMismatch},
		{"ragged plan", states, rewards, SubsetPlan{Rows: []int{0, 1, 2}, T: 2}, make([]float32, 4), ErrDimMismatch},
		{"empty plan", states, rewards, SubsetPlan{}, make([]float32, 4), ErrDimMismatch},
		{"subset larger than prepared", states, rewards, SubsetPlan{Rows: make([]int, 9), T: 9}, make([]float32, 4), ErrDimMismatch},
	}
	for _, tt := range tests {
		err := enc.EncodeReward(tt.states, tt.rewards, tt.plan, tt.z)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// A NaN outside the plan's rows is never read.
	far := -1
	for r := range n {
		if !slices.Contains(plan.Rows, r) {
			far = r
		}
	}
	if far >= 0 {
		if err := enc.EncodeReward(states, nanAt(rewards, far), plan, make([]float32, 4)); err != nil {
			t.Errorf("NaN in an unused row: %v", err)
		}
	}
}

func TestFRENetRefusesBadEncoders(t *testing.T) {
	s := freSizes{state: 6, stateEmbed: 8, bins: 8, rewardEmbed: 8, ffn: 16, blocks: 2, heads: 2, latent: 4}
	tests := map[string]func(n *FRENet){
		"missing state dense": func(n *FRENet) { delete(n.Arrays, FREStateW) },
		"missing block 1 wo":  func(n *FRENet) { delete(n.Arrays, FREBlockArray(1, "attn/wo")) },
		"block 1 wq transposed": func(n *FRENet) {
			n.Arrays[FREBlockArray(1, "attn/wq")] = Array{Shape: []int{16, 8}, Data: make([]float32, 128)}
		},
		"ffn b1 of another size": func(n *FRENet) {
			n.Arrays[FREBlockArray(0, "ffn/b1")] = Array{Shape: []int{17}, Data: make([]float32, 17)}
		},
		"truncated mean head":  func(n *FRENet) { a := n.Arrays[FREMeanW]; a.Data = a.Data[:5]; n.Arrays[FREMeanW] = a },
		"matrix stored flat":   func(n *FRENet) { a := n.Arrays[FREMeanW]; a.Shape = []int{64}; n.Arrays[FREMeanW] = a },
		"NaN embedding":        func(n *FRENet) { n.Arrays[FRERewardEmbed].Data[3] = float32(math.NaN()) },
		"zero reward scale":    func(n *FRENet) { n.Arrays[FRERewardScale].Data[0] = 0 },
		"missing reward scale": func(n *FRENet) { delete(n.Arrays, FRERewardScale) },
		"unknown array":        func(n *FRENet) { n.Arrays["fre/log_std/w"] = Array{Shape: []int{16, 4}, Data: make([]float32, 64)} },
		"block 3 of 2": func(n *FRENet) {
			n.Arrays[FREBlockArray(3, "ffn/b1")] = Array{Shape: []int{16}, Data: make([]float32, 16)}
		},
		"heads do not split": func(n *FRENet) { n.Heads = 3 },
		"no heads":           func(n *FRENet) { n.Heads = 0 },
		"no blocks": func(n *FRENet) {
			for name := range n.Arrays {
				if !isFREArray(name, 0) {
					delete(n.Arrays, name)
				}
			}
		},
		"one bin": func(n *FRENet) { n.Arrays[FRERewardEmbed] = Array{Shape: []int{1, 8}, Data: make([]float32, 8)} },
	}
	for name, edit := range tests {
		net := randomFRENet(rand.New(rand.NewPCG(4, 4)), s)
		edit(net)
		_, err := NewEncoder(net, 4)
		if !errors.Is(err, ErrBadFRE) {
			t.Errorf("%s: %v, want ErrBadFRE", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}
