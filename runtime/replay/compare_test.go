package replay

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

// wire returns c as the board reads it after the 172-byte payload.
func wire(t *testing.T, c *proto.Command) (proto.Command, []byte) {
	t.Helper()
	buf := make([]byte, proto.CommandLen)
	if _, err := c.Marshal(buf); err != nil {
		t.Fatal(err)
	}
	var out proto.Command
	if err := out.Unmarshal(buf); err != nil {
		t.Fatal(err)
	}
	return out, buf
}

// Float rounding within the tolerance is recorded as the largest difference and the replay goes
// on; a field beyond it, or another driver mode, is a divergence naming the field and the byte
// where the payloads first differ.
func TestCompare(t *testing.T) {
	base := proto.Command{SessionID: 7, Index: 9}
	for d := range base.Drivers {
		base.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
		for p := range base.Drivers[d].Motor {
			base.Drivers[d].Motor[p] = proto.MotorCommand{PositionRef: 1.5, VelocityRef: 0.2, CurrentRef: 0.1, Kp: 0.3, Kd: 0.01, ISat: 8}
		}
	}
	const tol = 1e-3
	for _, tc := range []struct {
		name      string
		change    func(c *proto.Command)
		diverges  string // the field named, "" for within tolerance
		largest   string
		magnitude float64 // of the largest difference on the wire; +Inf for a divergent mode
	}{
		{"position by a few wire steps", func(c *proto.Command) { c.Drivers[2].Motor[1].PositionRef += 4e-6 }, "", "driver 2 motor 1 position_ref", 4e-6},
		{"two fields, the larger reported", func(c *proto.Command) {
			c.Drivers[0].Motor[0].PositionRef += 2e-6
			c.Drivers[5].Motor[0].CurrentRef += 9e-4 // one wire step of 1/1024 A
		}, "", "driver 5 motor 0 current_ref", 1.0 / 1024},
		{"position beyond the tolerance", func(c *proto.Command) { c.Drivers[3].Motor[0].PositionRef += 0.01 }, "driver 3 motor 0 position_ref", "", 0},
		{"a gain changed", func(c *proto.Command) { c.Drivers[1].Motor[1].Kp = 0 }, "driver 1 motor 1 kp", "", 0},
		{"i_sat changed", func(c *proto.Command) { c.Drivers[4].Motor[1].ISat = 4 }, "driver 4 motor 1 i_sat", "", 0},
		{"the first field beyond wins", func(c *proto.Command) {
			c.Drivers[2].Motor[0].Kd = 0
			c.Drivers[2].Motor[1].VelocityRef = 0
		}, "driver 2 motor 1 velocity_ref", "", 0},
		{"another driver mode", func(c *proto.Command) { c.Drivers[5].Mode = 0 }, "driver 5 mode", "", math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorded, recBytes := wire(t, &base)
			changed := base
			tc.change(&changed)
			replayed, repBytes := wire(t, &changed)
			res := &Result{}
			d := compare(42, &recorded, &replayed, tol, res)
			if tc.diverges == "" {
				if d != nil {
					t.Fatalf("diverged: %v", d)
				}
				l := res.Largest
				if l == nil || l.Field != tc.largest || l.Tick != 42 || math.Abs(l.Abs()-tc.magnitude) > 1e-6 || l.Abs() > tol {
					t.Fatalf("largest %+v, want %s by %g", l, tc.largest, tc.magnitude)
				}
				return
			}
			if d == nil {
				t.Fatalf("no divergence; largest %+v", res.Largest)
			}
			if d.Field != tc.diverges || d.Tick != 42 || !(d.Difference > tol) || math.IsInf(tc.magnitude, 1) != math.IsInf(d.Difference, 1) {
				t.Fatalf("divergence %v (by %g), want %s by %g", d, d.Difference, tc.diverges, tc.magnitude)
			}
			first := 0
			for recBytes[first] == repBytes[first] {
				first++
			}
			if first < d.Offset || first >= d.Offset+4 {
				t.Fatalf("field at byte %d, but the payloads first differ at byte %d", d.Offset, first)
			}
			if !strings.Contains(d.Error(), tc.diverges) {
				t.Fatalf("error %q does not name the field", d.Error())
			}
		})
	}
	recorded, a := wire(t, &base)
	same, b := wire(t, &base)
	if !bytes.Equal(a, b) {
		t.Fatal("one command marshalled twice differs")
	}
	res := &Result{}
	if d := compare(1, &recorded, &same, 0, res); d != nil || res.Largest == nil || res.Largest.Abs() != 0 {
		t.Fatalf("identical commands: divergence %v, largest %+v", d, res.Largest)
	}
}

func TestRunRefusesBadTolerance(t *testing.T) {
	for _, tol := range []float64{-1e-3, math.NaN(), math.Inf(1)} {
		if _, err := Run([]string{"unused.mcap"}, Options{Tolerance: tol}); err == nil || !strings.Contains(err.Error(), "tolerance") {
			t.Errorf("tolerance %v: err %v", tol, err)
		}
	}
}
