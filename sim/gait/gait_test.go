package gait

import (
	"math"
	"testing"
)

func TestDefaultPoseHeight(t *testing.T) {
	// The spec's standing pose puts the feet under the hips at about 0.235 m base height.
	front := FootPosition(FL, [3]float64{0, 0.8, -1.6})
	hind := FootPosition(HR, [3]float64{0, -0.8, 1.6})
	for _, f := range [][3]float64{front, hind} {
		if h := -f[2] + FootRadius; math.Abs(h-0.240) > 0.002 {
			t.Errorf("base height from FK %.4f", h)
		}
	}
	if math.Abs(front[0]-hipX) > 1e-12 || math.Abs(hind[0]+hipX) > 1e-12 {
		t.Errorf("feet not under hips: %v %v", front, hind)
	}
}

func TestIKInvertsFK(t *testing.T) {
	cases := []struct {
		leg int
		q   [3]float64
	}{
		{FL, [3]float64{0, 0.8, -1.6}}, {FR, [3]float64{0.2, 0.5, -1.2}}, {HL, [3]float64{-0.3, -0.9, 1.9}},
		{HR, [3]float64{0.1, -0.6, 1.4}}, {FL, [3]float64{-0.4, 1.1, -2.2}}, {HR, [3]float64{0.5, -0.2, 0.7}},
	}
	for _, c := range cases {
		got, err := LegIK(c.leg, FootPosition(c.leg, c.q))
		if err != nil {
			t.Fatalf("leg %d q %v: %v", c.leg, c.q, err)
		}
		for i := range 3 {
			if math.Abs(got[i]-c.q[i]) > 1e-9 {
				t.Errorf("leg %d: IK(FK(%v)) = %v", c.leg, c.q, got)
			}
		}
	}
	if _, err := LegIK(FL, [3]float64{hipX, hipY, -0.5}); err == nil {
		t.Error("foot 0.5 m below the hip is out of reach")
	}
}

func TestStanceFeetMoveBackwardsAtCommandedSpeed(t *testing.T) {
	p := DefaultParams()
	p.VX, p.Kp = 0.3, 0
	tr, err := NewTrot(p)
	if err != nil {
		t.Fatal(err)
	}
	const dt = 0.001
	q0, _ := tr.Targets(dt, Base{LinVel: [3]float64{0.3}})
	q1, _ := tr.Targets(dt, Base{LinVel: [3]float64{0.3}})
	// FL is in stance at phase 0: its foot moves at -VX in the base frame.
	f0 := FootPosition(FL, [3]float64(q0[0:3]))
	f1 := FootPosition(FL, [3]float64(q1[0:3]))
	if v := (f1[0] - f0[0]) / dt; math.Abs(v+0.3) > 1e-3 {
		t.Errorf("stance foot speed %.4f, want -0.3", v)
	}
	// FR is in swing: it is above the ground.
	if fr := FootPosition(FR, [3]float64(q1[3:6])); fr[2] <= -(p.Height-FootRadius)+1e-4 {
		t.Errorf("swing foot not lifted: z %.4f", fr[2])
	}
}

func TestGravityShareStiffensStance(t *testing.T) {
	p := DefaultParams()
	p.Period = 0
	tr, _ := NewTrot(p)
	q, _ := tr.Targets(0.02, Base{})
	p.Kp = 0
	plain, _ := NewTrot(p)
	q0, _ := plain.Targets(0.02, Base{})
	// A sagging front knee bends further (more negative); the pre-compensation extends it.
	if q[2] <= q0[2] {
		t.Errorf("front knee target %.3f not extended beyond %.3f", q[2], q0[2])
	}
}

func TestParamsValidate(t *testing.T) {
	bad := []Params{{Height: 0.05, Period: 0}, {Height: 0.2, StepHeight: 0.5}, {Height: 0.2, Period: 0.05}, {Height: 0.2, Period: 0.3, Duty: 1}}
	for _, p := range bad {
		if _, err := NewTrot(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
