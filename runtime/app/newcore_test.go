package app

import (
	"path/filepath"
	"strings"
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

// limits.link_timeout reaches the core's supervisor: a 30 ms gap in the sensor packets (the
// board's commands still arriving, so the board itself stays in control) latches link_timeout
// under the default 20 ms and not under 50 ms.
func TestConfiguredLinkTimeoutReachesTheCore(t *testing.T) {
	bank := skillstest.Constant(t, skillstest.Locomotion(t), [skills.NumJoints]float32{})
	path := filepath.Join(t.TempDir(), "bank.npz")
	if err := skills.WriteBank(path, bank); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		timeout time.Duration
		fault   string
	}{{core.DefaultLinkTimeout, "link_timeout"}, {50 * time.Millisecond, ""}} {
		cfg := config.Default()
		cfg.Bank, cfg.Calibration.Mode, cfg.Slider.Enabled = path, config.CalibrationOffsets, false
		cfg.Limits.LinkTimeout = tc.timeout
		c, err := NewCore(cfg, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var gapFrom uint64
		d := &driver.Lockstep{Core: c, Board: boardtest.FirstOrder(t, board.Config{}), SessionID: 0x602,
			DropSensor: func(tick uint64) bool { return gapFrom != 0 && tick >= gapFrom && tick < gapFrom+30 }}
		if err := d.Connect(); err != nil {
			t.Fatal(err)
		}
		for range 20000 {
			if err := d.Step(); err != nil {
				t.Fatal(err)
			}
			tick := uint64(d.Now() / time.Millisecond)
			if gapFrom == 0 && c.Phase() == core.PhaseHold {
				gapFrom = tick + 1
			}
			if gapFrom != 0 && tick > gapFrom+100 {
				break
			}
		}
		if gapFrom == 0 {
			t.Fatalf("link timeout %v: never stood (phase %v, fault %q)", tc.timeout, c.Phase(), c.Fault())
		}
		if got := c.Fault(); got != tc.fault {
			t.Errorf("link timeout %v, 30 ms without sensor packets: fault %q, want %q", tc.timeout, got, tc.fault)
		}
	}
}

// transitions.restart reaches the core's switching configuration: a negative hold, which the
// config file's check would refuse first, is refused by the core's own.
func TestConfiguredRestartReachesTheCore(t *testing.T) {
	cfg := config.Default()
	cfg.Bank = filepath.Join(t.TempDir(), "bank.npz")
	if err := skills.WriteBank(cfg.Bank, skillstest.Constant(t, skillstest.Navigation(t), [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	cfg.Calibration.Mode, cfg.Slider.Enabled = config.CalibrationOffsets, false
	cfg.Obstacle.Enabled, cfg.Transitions.Restart = true, -time.Millisecond
	if _, err := NewCore(cfg, Options{}, nil); err == nil || !strings.Contains(err.Error(), "restart hold -1ms") {
		t.Fatalf("a negative restart hold: %v", err)
	}
}

// Every obstacle_switching and transitions setting reaches the core's switching configuration,
// and the config's defaults are the core's.
func TestCoreConfigTakesTheSwitchingSettings(t *testing.T) {
	bank := skillstest.Constant(t, skillstest.Navigation(t), [skills.NumJoints]float32{})
	cfg := config.Default()
	cc, err := coreConfig(cfg, Options{}, bank)
	if err != nil {
		t.Fatal(err)
	}
	def := core.DefaultSwitchConfig()
	def.Enabled = cfg.Obstacle.Enabled
	if cc.Switching != def || cc.Blend != core.DefaultBlend {
		t.Errorf("from the default config: switching %+v, blend %v; want the core's %+v, %v", cc.Switching, cc.Blend, def, core.DefaultBlend)
	}
	cfg.Obstacle = config.Obstacle{Enabled: true, ClearanceM: 0.4, Cooldown: 2 * time.Second, StallAfter: 5 * time.Second,
		MinProgressM: 0.15, DetourM: 0.35, GoalRadiusM: 0.3}
	cfg.Transitions = config.Transitions{Blend: 200 * time.Millisecond, Restart: 700 * time.Millisecond}
	if cc, err = coreConfig(cfg, Options{}, bank); err != nil {
		t.Fatal(err)
	}
	want := core.SwitchConfig{Enabled: true, Clearance: 0.4, Ahead: def.Ahead, Cooldown: 2 * time.Second,
		StallAfter: 5 * time.Second, MinProgress: 0.15, Detour: 0.35, GoalRadius: 0.3, Restart: 700 * time.Millisecond}
	if cc.Switching != want || cc.Blend != 200*time.Millisecond {
		t.Errorf("switching %+v, blend %v; want %+v, 200ms", cc.Switching, cc.Blend, want)
	}
}
