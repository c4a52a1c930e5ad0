package app

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/driver"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// The runtime's configured navigation goal (navigation.goal) reaches the core: the first
// observation a navigation skill sees carries that goal relative to the robot.
func TestNewCoreStartsWithTheConfiguredGoal(t *testing.T) {
	bank := skillstest.Constant(t, skillstest.Navigation(t), [skills.NumJoints]float32{})
	cfg := config.Default()
	cfg.Bank = filepath.Join(t.TempDir(), "nav.npz")
	if err := skills.WriteBank(cfg.Bank, bank); err != nil {
		t.Fatal(err)
	}
	cfg.Calibration.Mode = config.CalibrationOffsets
	cfg.Slider.Enabled = false
	cfg.Navigation.Goal = config.Goal{X: 3, Y: 1, Yaw: 0.5}
	c, err := NewCore(cfg, Options{AutoRun: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const x, y, yaw = 0.5, -0.25, 0.2 // where the robot stands, as perception reports it
	d := &driver.Lockstep{Core: c, Board: boardtest.FirstOrder(t, board.Config{}), SessionID: 0x601,
		Perception: func(_ time.Duration, p *core.Perception) {
			p.Valid, p.Position, p.Yaw = true, [3]float64{x, y, 0.24}, yaw
		}}
	if err := d.Connect(); err != nil {
		t.Fatal(err)
	}
	for range 10000 {
		if err := d.Step(); err != nil {
			t.Fatal(err)
		}
		if f := c.Fault(); f != "" {
			t.Fatalf("fault %q before the skill ran", f)
		}
		out := d.Output()
		if !out.PolicyTick || c.Phase() != core.PhaseRun {
			continue
		}
		f, _ := bank.Contract.Layout.Field(skills.FieldTarget)
		st := bank.Contract.Normaliser
		want := skills.EncodeTarget(cfg.Navigation.Goal.X-x, cfg.Navigation.Goal.Y-y, yaw, cfg.Navigation.Goal.Yaw)
		for i, w := range want {
			k := f.Offset + i
			if got := out.Obs[k]*max(st.Std[k], st.Epsilon) + st.Mean[k]; got-w > 1e-5 || w-got > 1e-5 {
				t.Fatalf("target[%d] of the first observation %v, want %v (the configured goal %+v)", i, got, w, cfg.Navigation.Goal)
			}
		}
		return
	}
	t.Fatalf("no policy tick in 10 s: phase %v", c.Phase())
}
