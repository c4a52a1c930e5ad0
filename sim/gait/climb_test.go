package gait

import (
	"math"
	"testing"
)

func TestFootholdShift(t *testing.T) {
	// A 0.1 m step up whose edge is at x = 0.5 m.
	step := func(x, _ float64) float64 {
		if x >= 0.5 {
			return 0.1
		}
		return 0
	}
	// A 0.1 m step down whose edge is at x = -0.5 m.
	down := func(x, _ float64) float64 { return step(-x, 0) }
	cases := []struct {
		name    string
		terrain func(x, y float64) float64
		x, want float64 // foothold and where the foot should land
	}{
		{"flat ground", nil, 0.49, 0.49},
		{"well short of the step", step, 0.40, 0.40},
		{"just short of the step", step, 0.47, 0.5 - stepShort},
		{"at the foot of the step", step, 0.499, 0.5 - stepShort},
		{"on the edge", step, 0.505, 0.5 + stepBeyond},
		{"well on the step", step, 0.56, 0.56},
		{"on top, just before a step down", down, -0.51, -0.5 + stepBeyond},
		{"just past a step down", down, -0.49, -0.5 + stepBeyond},
		{"well past a step down", down, -0.40, -0.40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := Base{Terrain: c.terrain}
			if got := c.x + b.footholdShift(c.x, 0); math.Abs(got-c.want) > terrainProbe+1e-9 {
				t.Errorf("foothold %.3f moved to %.3f, want %.3f", c.x, got, c.want)
			}
		})
	}
}

// Without terrain, a climbing trot is the trot, to the bit.
func TestClimbOnFlatGround(t *testing.T) {
	cases := []struct {
		name            string
		vx, vy, yawRate float64
		height          float64
	}{
		{"in place", 0, 0, 0, 0.235},
		{"forward", 0.5, 0, 0, 0.235},
		{"turning", 0.3, 0.1, 1.2, 0.2},
		{"high", 0.3, 0, -0.4, 0.28},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultParams()
			p.VX, p.VY, p.YawRate, p.Height, p.StepHeight = c.vx, c.vy, c.yawRate, c.height, 0.08
			plain, err := NewTrot(p)
			if err != nil {
				t.Fatal(err)
			}
			p.Climb = true
			climb, err := NewTrot(p)
			if err != nil {
				t.Fatal(err)
			}
			plain.SetPhase(0.3)
			climb.SetPhase(0.3)
			base := Base{LinVel: [3]float64{c.vx * 0.8, c.vy, 0}, AngVel: [3]float64{0, 0, c.yawRate}}
			for i := range 100 {
				q0, err0 := plain.Targets(0.02, base)
				q1, err1 := climb.Targets(0.02, base)
				if err0 != nil || err1 != nil || q0 != q1 {
					t.Fatalf("step %d: climbing %v (%v), plain %v (%v)", i, q1, err1, q0, err0)
				}
			}
		})
	}
}

// A climbing trot walked kinematically over a box 0.10 m high and 0.3 m long, shorter than the
// robot: feet stand on the ground under them and never at a step's edge, the base rises over the
// box as far as the feet still on the floor reach and comes down after it, and every target is
// in reach.
func TestClimbOverBox(t *testing.T) {
	const (
		boxStart, boxEnd, boxHeight = 0.6, 0.9, 0.10
		dt                          = 0.02
	)
	box := func(x float64) float64 {
		if x >= boxStart && x <= boxEnd {
			return boxHeight
		}
		return 0
	}
	p := DefaultParams()
	p.VX, p.StepHeight, p.Kp, p.Climb = 0.5, 0.08, 0, true
	tr, err := NewTrot(p)
	if err != nil {
		t.Fatal(err)
	}
	baseX, maxRise := 0.0, 0.0
	base := Base{LinVel: [3]float64{p.VX}, Terrain: func(x, _ float64) float64 { return box(baseX + x) }}
	for i := 0; baseX < boxEnd+0.5; i++ {
		q, err := tr.Targets(dt, base)
		if err != nil {
			t.Fatalf("step %d at x %.3f: %v", i, baseX, err)
		}
		low := math.Inf(1)
		for leg := range NumLegs {
			f := FootPosition(leg, [3]float64(q[3*leg:3*leg+3]))
			x, z := baseX+f[0], f[2]+tr.rise+p.Height-FootRadius // world x, height of the sole
			ground := box(x)
			low = min(low, ground)
			if math.Mod(tr.phase+legPhaseOffset[leg], 1) >= p.Duty {
				if z < ground-1e-9 {
					t.Fatalf("step %d: swing foot %d at x %.3f is %.3f m under the ground %.2f", i, leg, x, z, ground)
				}
				continue
			}
			if math.Abs(z-ground) > 1e-6 {
				t.Fatalf("step %d: stance foot %d at x %.3f stands %.4f m high on ground %.2f", i, leg, x, z, ground)
			}
			if (x > boxStart-stepShort+terrainProbe && x < boxStart+stepBeyond-terrainProbe) || math.Abs(x-boxEnd) < stepBeyond-terrainProbe {
				t.Fatalf("step %d: stance foot %d at x %.3f by an edge of the box", i, leg, x)
			}
		}
		if tr.rise > low+riseReach+1e-9 {
			t.Fatalf("step %d: base raised %.3f m over feet as low as %.2f", i, tr.rise, low)
		}
		maxRise = max(maxRise, tr.rise)
		baseX += p.VX * dt
	}
	if math.Abs(maxRise-riseReach) > 1e-9 || tr.rise != 0 {
		t.Errorf("base rose %.3f m over the box and ended %.3f m up; want %.3f and 0", maxRise, tr.rise, riseReach)
	}
}
