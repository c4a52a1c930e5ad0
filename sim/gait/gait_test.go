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

func TestSwingProfile(t *testing.T) {
	for _, c := range []struct{ s, forward, lift float64 }{{0, 0, 0}, {0.5, 0.5, 1}, {1, 1, 0}, {swingRise, 0, 1}, {1 - swingRise, 1, 1}} {
		f, l := swingProfile(c.s)
		if math.Abs(f-c.forward) > 0.15 || math.Abs(l-c.lift) > 1e-12 {
			t.Errorf("swingProfile(%.2f) = %.3f, %.3f; want about %.2f, %.2f", c.s, f, l, c.forward, c.lift)
		}
	}
	// The foot is fully up while it travels most of the way.
	for s := swingRise; s <= 1-swingRise; s += 0.01 {
		if _, l := swingProfile(s); l < 1-1e-12 {
			t.Fatalf("lift %.3f at %.2f", l, s)
		}
	}
	prev := 0.0
	for s := 0.0; s <= 1; s += 0.01 {
		f, _ := swingProfile(s)
		if f < prev {
			t.Fatalf("foot moves back at swing phase %.2f", s)
		}
		prev = f
	}
}

// Stance feet stand on the terrain under them and swing feet climb from the height under their
// take-off point to the height under their landing point.
func TestTerrainFootholds(t *testing.T) {
	p := DefaultParams()
	p.VX, p.Kp = 0.3, 0
	const step = 0.05
	// A 5 cm step under everything ahead of x = 0.1 m (front feet), flat behind.
	terrain := func(x, _ float64) float64 {
		if x > 0.1 {
			return step
		}
		return 0
	}
	flat, _ := NewTrot(p)
	raised, _ := NewTrot(p)
	for i := range 18 {
		qf, err := flat.Targets(0.02, Base{})
		if err != nil {
			t.Fatal(err)
		}
		qr, err := raised.Targets(0.02, Base{Terrain: terrain})
		if err != nil {
			t.Fatal(err)
		}
		for leg := range NumLegs {
			ff := FootPosition(leg, [3]float64(qf[3*leg:3*leg+3]))
			fr := FootPosition(leg, [3]float64(qr[3*leg:3*leg+3]))
			want := 0.0
			if front(leg) > 0 {
				want = step
			}
			if math.Abs(fr[2]-ff[2]-want) > 1e-9 || math.Abs(fr[0]-ff[0]) > 1e-9 {
				t.Fatalf("step %d leg %d: foot %.4f on the terrain, %.4f on flat ground; want %.3f higher", i, leg, fr, ff, want)
			}
		}
	}
}

func TestPhase(t *testing.T) {
	tr, _ := NewTrot(DefaultParams())
	tr.SetPhase(1.25)
	if tr.Phase() != 0.25 {
		t.Fatalf("phase %v", tr.Phase())
	}
	tr.SetPhase(-0.25)
	if tr.Phase() != 0.75 {
		t.Fatalf("phase %v", tr.Phase())
	}
	if _, err := tr.Targets(tr.P.Period/2, Base{}); err != nil || math.Abs(tr.Phase()-0.25) > 1e-12 {
		t.Fatalf("half a period later: phase %v, %v", tr.Phase(), err)
	}
}
