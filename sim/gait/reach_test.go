package gait

import (
	"math"
	"testing"
)

func TestClampReach(t *testing.T) {
	// How a target lies: in reach, beyond the straight leg, or closer under the hip than minDepth.
	const (
		inReach = iota
		tooFar
		tooHigh
	)
	cases := []struct {
		name string
		leg  int
		p    [3]float64
		lies int
	}{
		{"nominal foot", FL, NominalFoot(FL, 0.235), inReach},
		{"long stride", HR, [3]float64{-hipX - 0.08, -hipY - legOffsetY, -0.28}, inReach},
		{"far below", FL, [3]float64{hipX, hipY + legOffsetY, -0.40}, tooFar},
		{"far behind", HL, [3]float64{-hipX - 0.25, hipY + legOffsetY, -0.25}, tooFar},
		{"far out and down", FR, [3]float64{hipX + 0.1, -hipY - 0.2, -0.3}, tooFar},
		{"inside the hip's offset", FR, [3]float64{hipX, -hipY - 0.03, -0.02}, tooHigh},
		{"above the hip", HL, [3]float64{-hipX, hipY + legOffsetY, 0.05}, tooHigh},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hip := Hip(c.leg)
			if _, err := LegIK(c.leg, c.p); (err != nil) != (c.lies == tooFar) && c.lies != tooHigh {
				t.Fatalf("target %v: LegIK error %v", c.p, err)
			}
			if (hip[2]-c.p[2] < minDepth) != (c.lies == tooHigh) {
				t.Fatalf("target %v: %.3f m under the hip", c.p, hip[2]-c.p[2])
			}
			got := ClampReach(c.leg, c.p)
			if c.lies == inReach {
				if got != c.p {
					t.Fatalf("a target in reach moved from %v to %v", c.p, got)
				}
				return
			}
			q, err := LegIK(c.leg, got)
			if err != nil {
				t.Fatalf("clamped target %v: %v", got, err)
			}
			// The reach is maxReach in the leg's plane, beside the HAA axis's lateral offset.
			if d := dist(got, hip); d > math.Hypot(maxReach, legOffsetY)+1e-9 || got[2] > hip[2]-minDepth+1e-9 {
				t.Errorf("clamped target %v is %.4f m from the hip, %.4f below it", got, d, hip[2]-got[2])
			}
			if f := FootPosition(c.leg, q); dist(f, got) > 1e-9 {
				t.Errorf("IK of the clamped target %v puts the foot at %v", got, f)
			}
			// The leg points where the foot should be: forward stays forward, down stays down.
			if (got[0]-hip[0])*(c.p[0]-hip[0]) < 0 {
				t.Errorf("clamped target %v on the other side of the hip from %v", got, c.p)
			}
		})
	}
}

func dist(a, b [3]float64) float64 { return math.Hypot(math.Hypot(a[0]-b[0], a[1]-b[1]), a[2]-b[2]) }

// TestUnreachableTargetsAreClamped: a trot that does not climb, walking sideways on ground
// raised nearly to its hips (a wandering behaviour that has run onto a 0.11 m box, its swing
// height on top), is asked for feet inside its hips' lateral offset; it gets the nearest
// targets in reach instead of an error that stops a collection, and feet in reach keep the
// targets they had.
func TestUnreachableTargetsAreClamped(t *testing.T) {
	p := DefaultParams()
	p.VY, p.Kp = -0.4, 0
	const raise = 0.15
	flat, err := NewTrot(p)
	if err != nil {
		t.Fatal(err)
	}
	raised, err := NewTrot(p)
	if err != nil {
		t.Fatal(err)
	}
	clamped := 0
	for i := range 18 {
		qf, err := flat.Targets(0.02, Base{})
		if err != nil {
			t.Fatal(err)
		}
		qr, err := raised.Targets(0.02, Base{Terrain: func(_, _ float64) float64 { return raise }})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for leg := range NumLegs {
			target := FootPosition(leg, [3]float64(qf[3*leg:3*leg+3]))
			target[2] += raise
			got := FootPosition(leg, [3]float64(qr[3*leg:3*leg+3]))
			want := target
			if _, err := LegIK(leg, target); err != nil {
				clamped++
				want = ClampReach(leg, target)
			}
			if math.Abs(got[0]-want[0])+math.Abs(got[1]-want[1])+math.Abs(got[2]-want[2]) > 1e-9 {
				t.Fatalf("step %d leg %d: target %.4f tracked at %.4f, want %.4f", i, leg, target, got, want)
			}
		}
	}
	if clamped == 0 {
		t.Fatal("no foot target was out of reach: the ground is too low to test the clamp")
	}
}
