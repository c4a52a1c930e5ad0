package skills

import (
	"errors"
	"math"
	"testing"
)

func TestActionTargets(t *testing.T) {
	m := ActionMap{DefaultPose: StandingPose, Scale: 0.3}
	for j, lim := range HardwareJointLimits {
		m.Lower[j], m.Upper[j] = -lim, lim
	}
	wide := m
	wide.Scale = 5 // reaches past every joint limit from the standing pose
	nan := float32(math.NaN())
	tests := []struct {
		name    string
		m       ActionMap
		a       float32 // applied to every joint
		want    func(j int) float32
		wantErr error
	}{
		{"zero is the default pose", m, 0, func(j int) float32 { return StandingPose[j] }, nil},
		{"scaled", m, 0.5, func(j int) float32 { return StandingPose[j] + 0.15 }, nil},
		{"clipped to +1", m, 7, func(j int) float32 { return StandingPose[j] + 0.3 }, nil},
		{"clipped to -1", m, -7, func(j int) float32 { return StandingPose[j] - 0.3 }, nil},
		{"clamped to the upper limit", wide, 1, func(j int) float32 { return HardwareJointLimits[j] }, nil},
		{"clamped to the lower limit", wide, -1, func(j int) float32 { return -HardwareJointLimits[j] }, nil},
		{"NaN holds the default pose", m, nan, func(j int) float32 { return StandingPose[j] }, ErrNonFiniteAction},
		{"Inf holds the default pose", m, float32(math.Inf(1)), func(j int) float32 { return StandingPose[j] }, ErrNonFiniteAction},
	}
	for _, tt := range tests {
		a, q := make([]float32, NumJoints), make([]float32, NumJoints)
		for j := range a {
			a[j] = tt.a
		}
		err := tt.m.Targets(a, q)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		}
		for j := range q {
			if math.Abs(float64(q[j]-tt.want(j))) > 1e-6 {
				t.Errorf("%s: joint %s = %v, want %v", tt.name, JointNames[j], q[j], tt.want(j))
			}
		}
	}
}

func TestActionInverse(t *testing.T) {
	m := ActionMap{DefaultPose: StandingPose, Scale: 0.25}
	for j, lim := range HardwareJointLimits {
		m.Lower[j], m.Upper[j] = -lim, lim
	}
	a := []float32{-1, -0.5, 0, 0.5, 1, 0.1, -0.1, 0.9, -0.9, 0.3, 0.7, -0.7}
	q, back := make([]float32, NumJoints), make([]float32, NumJoints)
	if err := m.Targets(a, q); err != nil {
		t.Fatal(err)
	}
	if err := m.Actions(q, back); err != nil {
		t.Fatal(err)
	}
	for j := range a {
		if math.Abs(float64(back[j]-a[j])) > 1e-5 {
			t.Errorf("joint %d: a %v -> q %v -> a %v", j, a[j], q[j], back[j])
		}
	}
	q[0] = 5 // unreachable target: the action saturates
	_ = m.Actions(q, back)
	if back[0] != 1 {
		t.Errorf("unreachable target gave action %v, want 1", back[0])
	}
	if err := m.Actions(q[:3], back); !errors.Is(err, ErrDimMismatch) {
		t.Error(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = m.Targets(a, q) }); n != 0 {
		t.Errorf("Targets allocates %v times", n)
	}
}

func TestActionMapValidate(t *testing.T) {
	good := ActionMap{DefaultPose: StandingPose, Scale: 0.3}
	for j, lim := range HardwareJointLimits {
		good.Lower[j], good.Upper[j] = -lim, lim
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*ActionMap){
		"zero scale":           func(m *ActionMap) { m.Scale = 0 },
		"NaN scale":            func(m *ActionMap) { m.Scale = float32(math.NaN()) },
		"beyond the hardware":  func(m *ActionMap) { m.Upper[2] = 2.9 },
		"empty interval":       func(m *ActionMap) { m.Lower[4] = m.Upper[4] },
		"default pose outside": func(m *ActionMap) { m.Upper[1] = 0.5 },
		"NaN limit":            func(m *ActionMap) { m.Lower[0] = float32(math.NaN()) },
		"NaN default pose":     func(m *ActionMap) { m.DefaultPose[0] = float32(math.NaN()) },
	}
	for name, f := range tests {
		m := good
		f(&m)
		if err := m.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
