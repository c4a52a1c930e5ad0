package skills

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// distinctInputs fills every input with values that identify their source.
func distinctInputs() *Inputs {
	in := &Inputs{RemainingTime: 5}
	fill := func(dst []float32, base float32) {
		for i := range dst {
			dst[i] = base + float32(i)/100
		}
	}
	fill(in.BaseLinVel[:], 1)
	fill(in.BaseAngVel[:], 2)
	fill(in.ProjectedGravity[:], 3)
	fill(in.Command[:], 4)
	fill(in.JointPos[:], 5)
	fill(in.JointVel[:], 6)
	fill(in.PreviousAction[:], 7)
	fill(in.Target[:], 8)
	fill(in.HeightMap[:], 9)
	return in
}

func TestBuilderRaw(t *testing.T) {
	in := distinctInputs()
	pose := [NumJoints]float32(StandingPose)
	jointPos := make([]float32, NumJoints)
	for j := range jointPos {
		jointPos[j] = in.JointPos[j] - pose[j]
	}
	want := map[string][]float32{
		FieldBaseLinVel:       in.BaseLinVel[:],
		FieldBaseAngVel:       in.BaseAngVel[:],
		FieldProjectedGravity: in.ProjectedGravity[:],
		FieldCommand:          in.Command[:],
		FieldJointPos:         jointPos,
		FieldJointVel:         in.JointVel[:],
		FieldPreviousAction:   in.PreviousAction[:],
		FieldTarget:           in.Target[:],
		FieldHeightMap:        in.HeightMap[:],
		FieldRemainingTime:    {0.25}, // 5 s of a 20 s episode
	}
	for _, l := range Layouts() {
		t.Run(l.Name, func(t *testing.T) {
			b, err := NewBuilder(l, pose, 20, nil)
			if err != nil {
				t.Fatal(err)
			}
			obs := make([]float32, b.Dim())
			if err := b.Raw(in, obs); err != nil {
				t.Fatal(err)
			}
			for _, f := range l.Fields {
				if got := obs[f.Offset : f.Offset+f.Dim]; !slices.Equal(got, want[f.Name]) {
					t.Errorf("%s = %v, want %v", f.Name, got, want[f.Name])
				}
			}
		})
	}
}

func TestBuilderRemainingTimeClamped(t *testing.T) {
	b, err := NewBuilder(Navigation171(), StandingPose, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float32, b.Dim())
	for _, tt := range []struct{ left, want float32 }{{-1, 0}, {0, 0}, {2.5, 0.25}, {10, 1}, {30, 1}} {
		in := &Inputs{RemainingTime: tt.left}
		if err := b.Raw(in, obs); err != nil {
			t.Fatal(err)
		}
		if got := obs[170]; got != tt.want {
			t.Errorf("remaining %v s -> %v, want %v", tt.left, got, tt.want)
		}
	}
}

// Build then undoing the normaliser by hand gives back Raw.
func TestBuilderNormalisesRoundTrip(t *testing.T) {
	for _, l := range Layouts() {
		c := testContract(t, l)
		for i := range c.Normaliser.Mean {
			c.Normaliser.Mean[i] = float32(i%7) - 3
			c.Normaliser.Std[i] = 0.5 + float32(i%5)
		}
		c.Normaliser.Std[3] = 0 // floored to epsilon
		b, err := c.NewBuilder()
		if err != nil {
			t.Fatal(err)
		}
		in := distinctInputs()
		raw, norm := make([]float32, b.Dim()), make([]float32, b.Dim())
		if err := b.Raw(in, raw); err != nil {
			t.Fatal(err)
		}
		if err := b.Build(in, norm); err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			sd := max(c.Normaliser.Std[i], c.Normaliser.Epsilon)
			back := norm[i]*sd + c.Normaliser.Mean[i]
			if math.Abs(float64(back-raw[i])) > 1e-4*max(1, math.Abs(float64(raw[i]))) {
				t.Fatalf("%s dim %d: raw %v, normalised %v, back %v", l.Name, i, raw[i], norm[i], back)
			}
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	b, err := NewBuilder(Locomotion48(), StandingPose, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float32, 48)
	if err := b.Build(&Inputs{}, obs); !errors.Is(err, ErrNoNormaliser) {
		t.Errorf("Build without normaliser: %v", err)
	}
	if err := b.Raw(&Inputs{}, obs[:47]); !errors.Is(err, ErrDimMismatch) {
		t.Errorf("short dst: %v", err)
	}
	in := &Inputs{}
	in.JointVel[4] = float32(math.NaN())
	if err := b.Raw(in, obs); !errors.Is(err, ErrNonFiniteObservation) {
		t.Errorf("NaN input: %v", err)
	}
	in = &Inputs{}
	in.BaseLinVel[0] = float32(math.Inf(1))
	if err := b.Raw(in, obs); !errors.Is(err, ErrNonFiniteObservation) {
		t.Errorf("Inf input: %v", err)
	}

	bad := []struct {
		name string
		l    Layout
		ep   float64
		norm int
	}{
		{"unknown field", Layout{Name: "x", Fields: []Field{{Name: "lidar", Dim: 3}}}, 0, 0},
		{"wrong dim", Layout{Name: "x", Fields: []Field{{Name: FieldCommand, Dim: 2}}}, 0, 0},
		{"no episode length", Navigation171(), 0, 0},
		{"negative episode length", Navigation171(), -3, 0},
		{"normaliser size", Locomotion48(), 0, 47},
		{"invalid layout", Layout{Name: "x"}, 0, 0},
	}
	for _, tt := range bad {
		var norm *Normaliser
		if tt.norm > 0 {
			norm, _ = NewNormaliser(IdentityStats(tt.norm))
		}
		if _, err := NewBuilder(tt.l, StandingPose, tt.ep, norm); err == nil {
			t.Errorf("%s: NewBuilder accepted it", tt.name)
		}
	}
}

func TestBuilderDoesNotAllocate(t *testing.T) {
	for _, l := range Layouts() {
		c := testContract(t, l)
		b, err := c.NewBuilder()
		if err != nil {
			t.Fatal(err)
		}
		in := distinctInputs()
		obs := make([]float32, b.Dim())
		if n := testing.AllocsPerRun(100, func() {
			if err := b.Build(in, obs); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: Build allocates %v times", l.Name, n)
		}
	}
}

func TestFitStats(t *testing.T) {
	data := []float32{1, 10, 3, 10, 5, 10} // rows of 2: column 0 = 1,3,5; column 1 constant
	s, err := FitStats(data, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mean[0] != 3 || s.Mean[1] != 10 || math.Abs(float64(s.Std[0])-math.Sqrt(8.0/3)) > 1e-6 || s.Std[1] != 0 {
		t.Fatalf("FitStats = %+v", s)
	}
	n, err := NewNormaliser(s)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{5, 11}
	if err := n.Apply(x); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(x[0])-2/math.Sqrt(8.0/3)) > 1e-6 || x[1] != 2 { // (11-10)/max(0, 0.5)
		t.Errorf("normalised = %v", x)
	}
	for _, bad := range []struct {
		data []float32
		dim  int
	}{{nil, 2}, {data, 4}, {data, 0}} {
		if _, err := FitStats(bad.data, bad.dim, 0.1); err == nil {
			t.Errorf("FitStats(%d values, dim %d) accepted", len(bad.data), bad.dim)
		}
	}
	if _, err := FitStats(data, 2, 0); err == nil {
		t.Error("zero epsilon accepted")
	}
	nan := append([]float32(nil), data...)
	nan[2] = float32(math.NaN())
	if _, err := FitStats(nan, 2, 0.1); err == nil {
		t.Error("NaN data accepted")
	}
}

func TestProjector(t *testing.T) {
	for _, l := range Layouts() {
		c := testContract(t, l)
		for i := range c.Features.Stats.Mean {
			c.Features.Stats.Mean[i] = 1
			c.Features.Stats.Std[i] = 2
		}
		p, err := c.NewProjector()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewBuilder(l, c.DefaultPose, c.EpisodeSeconds, nil)
		raw := make([]float32, b.Dim())
		if err := b.Raw(distinctInputs(), raw); err != nil {
			t.Fatal(err)
		}
		var want []float32
		for _, name := range c.Features.Fields {
			f, _ := l.Field(name)
			for _, v := range raw[f.Offset : f.Offset+f.Dim] {
				want = append(want, (v-1)/2)
			}
		}
		phi := make([]float32, p.Dim())
		if err := p.Project(raw, phi); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(phi, want) {
			t.Errorf("%s: phi = %v, want %v", l.Name, phi, want)
		}
		if n := testing.AllocsPerRun(100, func() { _ = p.Project(raw, phi) }); n != 0 {
			t.Errorf("Project allocates %v times", n)
		}
		if err := p.Project(raw[1:], phi); !errors.Is(err, ErrDimMismatch) {
			t.Errorf("short observation: %v", err)
		}
	}
	bad := []Features{
		{},
		{Fields: []string{"lidar"}, Stats: IdentityStats(1)},
		{Fields: []string{FieldJointPos}, Stats: IdentityStats(11)},
	}
	for _, f := range bad {
		if _, err := NewProjector(Locomotion48(), f); err == nil {
			t.Errorf("NewProjector(%+v) accepted", f.Fields)
		}
	}
}

// A feature may select one value of a field ("target[1]", the goal's sideways position): phi is
// then that value alone, standardised, once per listing; a malformed selection or one outside the
// field is refused with a clear error.
func TestProjectorOneValueOfAField(t *testing.T) {
	l := Navigation171()
	target, _ := l.Field(FieldTarget)
	raw := make([]float32, l.Dim())
	for i := range raw {
		raw[i] = float32(i)
	}
	f := Features{Fields: []string{FieldBaseAngVel, "target[1]"}, Stats: IdentityStats(4)}
	p, err := NewProjector(l, f)
	if err != nil {
		t.Fatal(err)
	}
	angVel, _ := l.Field(FieldBaseAngVel)
	phi := make([]float32, p.Dim())
	if err := p.Project(raw, phi); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(raw[angVel.Offset:angVel.Offset+3]), raw[target.Offset+1])
	if !slices.Equal(phi, want) {
		t.Errorf("phi = %v, want %v", phi, want)
	}
	for name, want := range map[string]string{
		"target[4]": "want target[i] with 0 <= i < 4", "target[-1]": "want target[i]", "target[": "want target[i]",
		"target[]": "want target[i]", "target[x]": "want target[i]", "target[1]x": "want target[i]",
		"target[1": "want target[i]", "target[1]]": "want target[i]", "lidar[0]": `"lidar" is not in layout`, "[0]": `"" is not in layout`,
	} {
		f := Features{Fields: []string{name}, Stats: IdentityStats(1)}
		if _, err := NewProjector(l, f); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("feature %q: err = %v, want one saying %q", name, err, want)
		}
	}
	// Listed twice, it counts twice.
	twice, err := NewProjector(l, Features{Fields: []string{"target[1]", "target[1]"}, Stats: IdentityStats(2)})
	if err != nil {
		t.Fatal(err)
	}
	phi = make([]float32, twice.Dim())
	if err := twice.Project(raw, phi); err != nil || phi[0] != raw[target.Offset+1] || phi[1] != phi[0] {
		t.Errorf("target[1] twice: phi = %v, %v", phi, err)
	}
}

// A clip clamps standardised values to [-Clip, Clip] (a NaN stays NaN for the finiteness checks
// after it); a negative or non-finite clip is refused; 0, no clip, is left out of the stored
// contract, so that banks without one read and write as before.
func TestNormaliserClip(t *testing.T) {
	s := Stats{Mean: []float32{0, 0, 0, 0}, Std: []float32{1, 1, 0.01, 1}, Epsilon: 0.01, Clip: 5}
	n, err := NewNormaliser(s)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{3, -7, 0.6, float32(math.NaN())} // the third: a 0.6 m wall where the data varied by 1 cm
	if err := n.Apply(x); err != nil {
		t.Fatal(err)
	}
	if x[0] != 3 || x[1] != -5 || x[2] != 5 || !math.IsNaN(float64(x[3])) {
		t.Errorf("clipped = %v, want [3 -5 5 NaN]", x)
	}
	for _, bad := range []float32{-1, float32(math.NaN()), float32(math.Inf(1))} {
		s.Clip = bad
		if err := s.Validate(4); err == nil || !strings.Contains(err.Error(), "clip") {
			t.Errorf("clip %v: %v, want refused", bad, err)
		}
	}
	s.Clip = 0
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "clip") {
		t.Errorf("no clip stored as %s", js)
	}
}

// The contract's clip reaches the observation its builder builds (the one the runtime and
// evaluation feed the policy): every value is the standardised one clamped to +-Clip.
func TestBuilderClipsAsTheContractSays(t *testing.T) {
	for _, l := range Layouts() {
		c := testContract(t, l)
		for i := range c.Normaliser.Mean {
			c.Normaliser.Mean[i] = float32(i%7) - 3
			c.Normaliser.Std[i] = 0.5 + float32(i%5)
		}
		c.Normaliser.Clip = 1
		b, err := c.NewBuilder()
		if err != nil {
			t.Fatal(err)
		}
		in := distinctInputs()
		raw, obs := make([]float32, b.Dim()), make([]float32, b.Dim())
		if err := b.Raw(in, raw); err != nil {
			t.Fatal(err)
		}
		if err := b.Build(in, obs); err != nil {
			t.Fatal(err)
		}
		clipped := 0
		for i := range raw {
			z := (raw[i] - c.Normaliser.Mean[i]) / max(c.Normaliser.Std[i], c.Normaliser.Epsilon)
			want := min(max(z, -1), 1)
			if math.Abs(float64(obs[i]-want)) > 1e-5 {
				t.Fatalf("%s dim %d: raw %v, built %v, want %v", l.Name, i, raw[i], obs[i], want)
			}
			if want != z {
				clipped++
			}
		}
		if clipped == 0 || clipped == len(raw) {
			t.Fatalf("%s: %d of %d values clipped; the check needs some of each", l.Name, clipped, len(raw))
		}
	}
}
