package core_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the scenario tests from this run")

// TestScenarios plays every script in testdata/scenarios against the IO-free core, tick by tick,
// and compares what it did (events, phases, skills, commanded targets) with the golden file
// next to the script. go test -run TestScenarios -update rewrites the golden files; review the
// diff before committing it.
func TestScenarios(t *testing.T) {
	eachScenario(t, func(t *testing.T, name, src, golden string) {
		got := play(t, src)
		// The core is deterministic: the same inputs give the same log, byte for byte.
		if again := play(t, src); !bytes.Equal(got, again) {
			t.Fatalf("two plays of %s differ:\n%s", name, lineDiff(string(got), string(again)))
		}
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file %s:\n%s", name, golden, lineDiff(string(want), string(got)))
		}
	})
}

// eachScenario runs f as a subtest for every script in testdata/scenarios, with the script's
// name, its text and the path of its golden file.
func eachScenario(t *testing.T, f func(t *testing.T, name, src, golden string)) {
	scripts, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".txt")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			f(t, name, string(src), strings.TrimSuffix(script, ".txt")+".golden")
		})
	}
}

// The measures travel in the bank file: every scenario played with its measures written into
// the bank's latents (dualforce eval --write-bank's way) and read back by LatentMeasures gives
// its golden log, switches and their reported success rates included.
func TestScenariosThroughTheBankFile(t *testing.T) {
	eachScenario(t, func(t *testing.T, name, src, golden string) {
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		s := newScenario(t, 0)
		s.viaBankFile = true
		if got := s.play(src); !bytes.Equal(got, want) {
			t.Errorf("%s through the bank file differs from the golden file:\n%s", name, lineDiff(string(want), string(got)))
		}
	})
}

// A policy head of Gaussian mixtures runs as the single Gaussians do: every scenario played
// with each slot's constant action on the most likely of three components (the others act
// otherwise) gives its golden log, commanded targets included, also from the bank file.
func TestScenariosWithMixtureHeads(t *testing.T) {
	eachScenario(t, func(t *testing.T, name, src, golden string) {
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		for _, viaBankFile := range []bool{false, true} {
			s := newScenario(t, 3)
			s.viaBankFile = viaBankFile
			if got := s.play(src); !bytes.Equal(got, want) {
				t.Errorf("%s with mixture heads (through the bank file: %v) differs from the golden file:\n%s", name, viaBankFile, lineDiff(string(want), string(got)))
			}
		}
	})
}

// lineDiff lists the first lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

// The scenario bank: four navigation skills, each a constant action, one per route.
var scenarioActions = [][skills.NumJoints]float32{
	{0, 0.2, -0.2, 0, 0.2, -0.2, 0, 0.2, -0.2, 0, 0.2, -0.2},             // 0: over
	{0.3, 0.5, -0.5, 0.3, 0.5, -0.5, 0.3, 0.5, -0.5, 0.3, 0.5, -0.5},     // 1: left
	{-0.3, -0.5, 0.5, -0.3, -0.5, 0.5, -0.3, -0.5, 0.5, -0.3, -0.5, 0.5}, // 2: right
	{0.1, 0.4, -0.4, 0.1, 0.4, -0.4, 0.1, 0.4, -0.4, 0.1, 0.4, -0.4},     // 3: left, another way
}

// scenarioMeasures is what evaluation would have measured of the scenario bank: scenarioRoutes,
// scenarioSuccess (a script may override a rate) and scenarioPsi; failed latents failed the
// filter.
type scenarioMeasures struct {
	failed  map[int]bool
	success map[[2]any]float64 // by {world, latent}, over scenarioSuccess
}

var (
	scenarioRoutes  = []corebus.Routes{corebus.RouteOver, corebus.RouteLeft, corebus.RouteRight, corebus.RouteLeft}
	scenarioSuccess = map[string][]float64{
		core.WorldObstacle:   {0.9, 0.85, 0.85, 0.85},
		core.WorldFenceLeft:  {0.6, 0.1, 0.9, 0.2},
		core.WorldFenceRight: {0.6, 0.8, 0.1, 0.8},
		core.WorldFenced:     {0.7, 0, 0, 0},
	}
	// Online successor features of navigation's phi (base_lin_vel, base_ang_vel), standardised.
	scenarioPsi = [][]float32{
		{1.0, 0, 0, 0, 0, 0},
		{0.6, 0.5, 0, 0, 0, 0.8},
		{0.6, -0.5, 0, 0, 0, -0.8},
		{0.3, 0.2, 0, 0, 0, 0.3},
	}
)

func (m scenarioMeasures) Passed(i int) bool        { return !m.failed[i] }
func (scenarioMeasures) Route(i int) corebus.Routes { return scenarioRoutes[i] }
func (scenarioMeasures) OnlinePsi(i int) []float32  { return scenarioPsi[i] }
func (m scenarioMeasures) Success(i int, w string) (float64, bool) {
	if rate, ok := m.success[[2]any{w, i}]; ok {
		return rate, true
	}
	s, ok := scenarioSuccess[w]
	if !ok {
		return 0, false
	}
	return s[i], true
}

// measuredBank is b with what m says of every latent in its metadata, as dualforce eval
// --write-bank writes it (filter verdict, route tag, goal rate per evaluation world, online
// successor features), read back from the bank file.
func measuredBank(t testing.TB, b *skills.Bank, m core.Measured) *skills.Bank {
	t.Helper()
	out := *b
	out.Latents = slices.Clone(b.Latents)
	for i := range out.Latents {
		info := &out.Latents[i].Info
		passed := m.Passed(i)
		info.PassedFilter, info.Tags, info.OnlinePsi = &passed, m.Route(i).Names(), m.OnlinePsi(i)
		for _, world := range []string{core.WorldObstacle, core.WorldFenceLeft, core.WorldFenceRight, core.WorldFenced} {
			for _, w := range []string{world, skills.AfterSwitchWorld(world)} {
				if rate, ok := m.Success(i, w); ok {
					if info.GoalRate == nil {
						info.GoalRate = map[string]float32{}
					}
					info.GoalRate[w] = float32(rate)
				}
			}
		}
	}
	var file bytes.Buffer
	if err := skills.EncodeBank(&file, &out); err != nil {
		t.Fatal(err)
	}
	back, err := skills.DecodeBank(bytes.NewReader(file.Bytes()), int64(file.Len()), skills.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// scenarioEncoder stands in for the FRE encoder: the latent of a reward is its weights on the
// first joint's position and velocity, so a script can aim at a stored latent or away from all.
type scenarioEncoder struct{ layout skills.Layout }

func (e scenarioEncoder) EncodeLinearReward(w, z []float32) error {
	pos, _ := skills.ElementOffset(e.layout, "joint_pos.FL_HAA")
	vel, _ := skills.ElementOffset(e.layout, "joint_vel.FL_HAA")
	z[0], z[1] = w[pos], w[vel]
	return nil
}

// scenario is a core in a kinematic world: joints follow their commanded targets exactly, the
// base is where the script puts it.
type scenario struct {
	t    testing.TB
	bank *skills.Bank
	opts core.LoadOptions
	cfg  core.Config
	c    *core.Core
	in   core.Input
	out  core.Output
	log  bytes.Buffer

	sensor   proto.Sensor
	perc     core.Perception
	slider   slider.Snapshot
	jmap     solo12.Map
	js       solo12.JointState
	jc       solo12.JointCommand
	velocity [2]float64 // m/s the base moves at in the world, set by "walk"

	// per run: the largest move of a commanded target in one tick while running
	maxStep      float64
	maxStepJoint int
	commands     int // operator commands sent, for their ids
	// quiet counts events without logging them (logging allocates; the core must not).
	quiet bool
	// viaBankFile: start writes the measures into the bank's latent metadata and loads the
	// bank read back from its file, so that the core reads them with LatentMeasures.
	viaBankFile bool
	// fences are world-fixed walls (x, y0, y1: thin across x, from y0 to y1), drawn into the
	// height map from the base's pose every tick while any stand.
	fences   [][3]float64
	counts   [8]int // events by kind
	triggers [3]int // skill switches by trigger
}

// newScenario is a scenario whose bank has a constant skill per scenarioActions, with policy
// heads of the given mixture components (0: single Gaussians).
func newScenario(t testing.TB, components int) *scenario {
	bank := skillstest.ConstantSlots(t, skillstest.Navigation(t), scenarioActions...)
	if components > 1 {
		bank = skillstest.MixtureSlots(t, skillstest.Navigation(t), components, scenarioActions...)
	}
	s := &scenario{t: t, bank: bank, opts: core.LoadOptions{Measured: scenarioMeasures{failed: map[int]bool{}, success: map[[2]any]float64{}}}}
	s.cfg = core.DefaultConfig(bank)
	s.cfg.Calibration = core.CalibrateOffsets
	s.cfg.StandUp = 500 * time.Millisecond
	s.cfg.AutoRun = true
	s.cfg.Settle = 0 // the scenarios run from the stand-up's end unless they say "config settle="
	s.cfg.Goal = [3]float64{3, 0, 0}
	s.perc.Valid = true
	s.wall(0)
	for d := range s.sensor.Drivers {
		s.sensor.Drivers[d].Status = proto.StatusSystemEnabled | proto.StatusMotor1Enabled | proto.StatusMotor1Ready | proto.StatusMotor2Enabled | proto.StatusMotor2Ready
	}
	s.sensor.IMU.Accelerometer = [3]float64{0, 0, 9.81}
	return s
}

// wall raises a 0.6 m wall on the height-map cells ahead on routes; the rest is flat ground
// 0.235 m below the base.
func (s *scenario) wall(routes corebus.Routes) {
	for i := range s.perc.HeightMap {
		x, y := skills.HeightMapPoint(i)
		h := float32(-0.235)
		var r corebus.Routes
		switch {
		case x <= 0.05 || x > 0.5:
		case y > 0.15:
			r = corebus.RouteLeft
		case y < -0.15:
			r = corebus.RouteRight
		default:
			r = corebus.RouteOver
		}
		if r&routes != 0 && x >= 0.3 {
			h += 0.6
		}
		s.perc.HeightMap[i] = h
	}
}

// fenceHalfThickness (m) makes a fence at least one height-map cell (0.1 m) thick.
const fenceHalfThickness = 0.06

// drawFences raises the height-map cells that fall on a fence, as seen from the base's pose, over
// the flat ground wall(0) draws.
func (s *scenario) drawFences() {
	s.wall(0)
	sin, cos := math.Sincos(s.perc.Yaw)
	for i := range s.perc.HeightMap {
		x, y := skills.HeightMapPoint(i)
		px, py := s.perc.Position[0]+cos*x-sin*y, s.perc.Position[1]+sin*x+cos*y
		for _, f := range s.fences {
			if math.Abs(px-f[0]) <= fenceHalfThickness && py >= f[1] && py <= f[2] {
				s.perc.HeightMap[i] += 0.6
				break
			}
		}
	}
}

func (s *scenario) start() {
	bank, opts := s.bank, s.opts
	if s.viaBankFile {
		bank, opts.Measured = measuredBank(s.t, bank, opts.Measured), nil
	}
	loaded, err := core.LoadWith(bank, "scenario.npz", 1, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	if s.c, err = core.New(s.cfg, loaded); err != nil {
		s.t.Fatal(err)
	}
	s.in = core.Input{Sensor: &s.sensor, Perception: &s.perc, Slider: &s.slider}
}

// step runs one link tick and moves the kinematic robot.
func (s *scenario) step() {
	s.in.Now += time.Millisecond
	s.in.Fresh = true
	held := s.jc.Q
	s.c.Step(&s.in, &s.out)
	for _, ev := range s.out.Events {
		s.counts[ev.Kind]++
		if ev.Kind == corebus.EventSkillSwitch {
			s.triggers[ev.Switch.Trigger]++
		}
		if !s.quiet {
			s.logf("%s %s", stamp(s.in.Now), describe(&ev))
		}
	}
	s.jmap.ReadCommand(&s.out.Command, &s.jc)
	if s.c.Phase() == core.PhaseRun {
		for j := range s.jc.Q {
			if d := math.Abs(s.jc.Q[j] - held[j]); d > s.maxStep {
				s.maxStep, s.maxStepJoint = d, j
			}
		}
	}
	for j := range s.js.Q {
		q := s.js.Q[j]
		if s.jc.Kp[j] > 0 {
			q = s.jc.Q[j]
		}
		s.js.Qd[j] = (q - s.js.Q[j]) / 0.001
		s.js.Q[j] = q
	}
	s.jmap.WriteSensor(&s.js, &s.sensor)
	s.perc.Position[0] += s.velocity[0] * 0.001
	s.perc.Position[1] += s.velocity[1] * 0.001
	if len(s.fences) > 0 {
		s.drawFences()
	}
}

func (s *scenario) logf(format string, a ...any) {
	fmt.Fprintf(&s.log, format+"\n", a...)
}

func stamp(d time.Duration) string { return fmt.Sprintf("%7.3fs", d.Seconds()) }

func skillName(a corebus.ActiveSkill) string {
	switch a.Source {
	case corebus.SkillBank:
		return fmt.Sprintf("bank:%d", a.Index)
	case corebus.SkillLatent:
		return "latent"
	}
	return "none"
}

func num(v float32) string {
	if v != v {
		return "-"
	}
	return strconv.FormatFloat(float64(v), 'f', 3, 32)
}

// describeReport renders what a switch, or a route found blocked, weighed.
func describeReport(r *corebus.SwitchReport) string {
	s := fmt.Sprintf("\n          trigger=%s blocked=%v world=%s considered=%d", r.Trigger, r.Blocked.Names(), r.World, r.Considered)
	if r.Chosen != "" {
		s += fmt.Sprintf(" chosen=%q", r.Chosen)
	}
	for _, c := range r.Listed() {
		s += fmt.Sprintf("\n          candidate %d success=%s sf_distance=%s", c.Index, num(c.Success), num(c.Distance))
		if c.AfterSwitch {
			s += " (success after a switch)"
		}
	}
	return s
}

// describe renders an event for the golden file.
func describe(ev *corebus.Event) string {
	switch ev.Kind {
	case corebus.EventSkillSwitch:
		s := fmt.Sprintf("skill_switch %s -> %s reason=%q", skillName(ev.From), skillName(ev.To), ev.Reason)
		if ev.Switch.Trigger != corebus.TriggerNone {
			s += describeReport(&ev.Switch)
		}
		return s
	case corebus.EventRouteBlocked:
		return fmt.Sprintf("route_blocked %s reason=%q", skillName(ev.From), ev.Reason) + describeReport(&ev.Switch)
	case corebus.EventCommandDone:
		s := fmt.Sprintf("command_done %s id=%s ok=%v", ev.Command.Kind, ev.Command.ID, ev.OK)
		if ev.Reason != "" {
			s += fmt.Sprintf(" reason=%q", ev.Reason)
		}
		if ev.Command.Kind == corebus.KindRecall {
			r := ev.Recalled
			s += fmt.Sprintf(" recalled=%d by_features=%v score=%.3f distance=%.3f", r.Index, r.ByFeatures, r.Score, r.Distance)
		}
		return s
	case corebus.EventFault:
		return fmt.Sprintf("fault %s reason=%q", ev.Fault, ev.Reason)
	case corebus.EventModeChange:
		return fmt.Sprintf("mode %s reason=%q", ev.Mode, ev.Reason)
	}
	return fmt.Sprintf("%s reason=%q", ev.Kind, ev.Reason)
}

// play runs a script and returns the log. A script line is a directive:
//
//	config blend=300ms stall=3s cooldown=1s failed=2 success=obstacle_fence_left:0:0.95
//	                                (before start; success overrides a measured goal rate:
//	                                world:latent:rate)
//	fre                             recall through a stand-in encoder (before start)
//	bank_fre 2.1 0                  the bank carries an FRE encoder that encodes every reward
//	                                to this latent (before start)
//	start                           build the core
//	run 1.5s                        step the link; a summary of the commands follows
//	wall left,over | wall none      the height map shows a wall on those routes
//	walk 0.5 0                      the base moves at (vx, vy) m/s in the world
//	yaw 0.6                         the base turns to this yaw (rad)
//	fence 1.0 0.4 2.4 | fence none  a 0.6 m wall fixed in the world, across x = 1.0 from
//	                                y = 0.4 to 2.4 (the height map shows it from the base's pose;
//	                                while fences stand they replace a "wall")
//	cmd skill 2 | cmd mode run | cmd estop | cmd estop_clear
//	cmd recall base_ang_vel.z=1,base_lin_vel.x=0.5 [max=0.2]
//	slider estop | slider ok        the slider box's E-stop
func play(t testing.TB, script string) []byte { return newScenario(t, 0).play(script) }

func (s *scenario) play(script string) []byte {
	t := s.t
	sc := bufio.NewScanner(strings.NewReader(script))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			s.logf("%s", line)
			continue
		}
		s.logf("> %s", line)
		f := strings.Fields(line)
		if err := s.directive(f); err != nil {
			t.Fatalf("script line %d %q: %v", n, line, err)
		}
	}
	return s.log.Bytes()
}

func (s *scenario) directive(f []string) error {
	switch f[0] {
	case "config":
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			d, _ := time.ParseDuration(v)
			switch k {
			case "blend":
				s.cfg.Blend = d
			case "stall":
				s.cfg.Switching.StallAfter = d
			case "detour":
				s.cfg.Switching.Detour, _ = strconv.ParseFloat(v, 64)
			case "restart":
				s.cfg.Switching.Restart = d
			case "settle":
				s.cfg.Settle = d
			case "cooldown":
				s.cfg.Switching.Cooldown = d
			case "keep":
				s.cfg.Switching.KeepMeasured, _ = strconv.ParseBool(v)
			case "skill":
				s.cfg.Skill, _ = strconv.Atoi(v)
			case "failed":
				i, _ := strconv.Atoi(v)
				s.opts.Measured.(scenarioMeasures).failed[i] = true
			case "success":
				f := strings.Split(v, ":")
				if len(f) != 3 {
					return fmt.Errorf("success=%s: want world:latent:rate", v)
				}
				i, err := strconv.Atoi(f[1])
				if err != nil {
					return err
				}
				rate, err := strconv.ParseFloat(f[2], 64)
				if err != nil {
					return err
				}
				s.opts.Measured.(scenarioMeasures).success[[2]any{f[0], i}] = rate
			default:
				return fmt.Errorf("unknown config key %q", k)
			}
		}
	case "fre":
		s.opts.Encoder = scenarioEncoder{s.bank.Contract.Layout}
	case "bank_fre":
		z := make([]float32, len(f)-1)
		for i, v := range f[1:] {
			x, err := strconv.ParseFloat(v, 32)
			if err != nil {
				return err
			}
			z[i] = float32(x)
		}
		s.bank.FRE = skillstest.ConstantFRE(s.t, s.bank.Contract, z)
	case "start":
		s.start()
	case "run":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return err
		}
		s.maxStep = 0
		for range d / time.Millisecond {
			s.step()
		}
		var snap corebus.Snapshot
		s.c.LoadMonitor(&snap)
		s.logf("%s phase=%s skill=%s fault=%q max_target_step=%.4f rad (%s) targets=%s", stamp(s.in.Now), s.c.Phase(), skillName(snap.Skill),
			s.c.Fault(), s.maxStep, solo12.Joint(s.maxStepJoint), fmtTargets(&s.jc.Q))
	case "wall":
		var r corebus.Routes
		for _, name := range strings.Split(f[1], ",") {
			switch name {
			case "left":
				r |= corebus.RouteLeft
			case "right":
				r |= corebus.RouteRight
			case "over":
				r |= corebus.RouteOver
			}
		}
		s.wall(r)
	case "walk":
		s.velocity[0], _ = strconv.ParseFloat(f[1], 64)
		s.velocity[1], _ = strconv.ParseFloat(f[2], 64)
	case "yaw":
		s.perc.Yaw, _ = strconv.ParseFloat(f[1], 64)
	case "fence":
		if f[1] == "none" {
			s.fences = nil
			s.wall(0)
			break
		}
		var fence [3]float64
		for k := range fence {
			v, err := strconv.ParseFloat(f[k+1], 64)
			if err != nil {
				return err
			}
			fence[k] = v
		}
		s.fences = append(s.fences, fence)
		s.drawFences()
	case "slider":
		s.slider.Latched = f[1] == "estop"
	case "cmd":
		return s.command(f[1:])
	default:
		return fmt.Errorf("unknown directive")
	}
	return nil
}

func (s *scenario) command(f []string) error {
	s.commands++
	cmd := corebus.Command{ID: fmt.Sprintf("c%d", s.commands)}
	switch f[0] {
	case "skill":
		i, err := strconv.Atoi(f[1])
		if err != nil {
			return err
		}
		cmd.Kind, cmd.Skill = corebus.KindSkill, corebus.SkillSelection{By: corebus.SelectByIndex, Index: i, Generation: 1}
	case "mode":
		m, ok := corebus.ParseMode(f[1])
		if !ok {
			return fmt.Errorf("mode %q", f[1])
		}
		cmd.Kind, cmd.Mode = corebus.KindMode, m
	case "estop":
		cmd.Kind = corebus.KindEStop
	case "estop_clear":
		cmd.Kind = corebus.KindEStopClear
	case "recall":
		cmd.Kind = corebus.KindRecall
		for _, term := range strings.Split(f[1], ",") {
			k, v, _ := strings.Cut(term, "=")
			w, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			cmd.Recall.Reward = append(cmd.Recall.Reward, corebus.RewardTerm{Element: k, Weight: w})
		}
		if len(f) > 2 {
			_, v, _ := strings.Cut(f[2], "=")
			cmd.Recall.MaxDistance, _ = strconv.ParseFloat(v, 64)
		}
	default:
		return fmt.Errorf("unknown command %q", f[0])
	}
	if !s.c.OfferCommand(cmd) {
		return fmt.Errorf("command queue full")
	}
	return nil
}

func fmtTargets(q *[12]float64) string {
	parts := make([]string, 3)
	for k, j := range []int{0, 1, 2} { // the front left leg stands for all: every action is per-leg alike
		parts[k] = strconv.FormatFloat(q[j], 'f', 3, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// After a restart switch the new skill starts as a run starts one: its first observation has
// no previous action and the whole episode left (remaining_time 1), where a blended switch
// carries on with the run's clock (stall.txt and restart.txt log the targets only).
func TestRestartStartsTheSkillAfresh(t *testing.T) {
	for _, tc := range []struct {
		restart  string
		wantTime func(float32) bool
	}{
		{"500ms", func(r float32) bool { return r > 0.99 }},
		{"0s", func(r float32) bool { return r < 0.99 }},
	} {
		s := newScenario(t, 0)
		// The no-progress switch comes at 4.9 s (restart.txt); 500 ms later, at a policy tick,
		// the restarted skill acts for the first time.
		s.play("config skill=0 stall=2s restart=" + tc.restart + "\nstart\nwalk 0.3 0\nrun 3s\nwalk 0 0\nrun 1.9s\nrun 500ms\n")
		if s.counts[corebus.EventSkillSwitch] != 1 || !s.out.PolicyTick {
			t.Fatalf("restart %s: %d switches, policy tick %v at 5.4 s", tc.restart, s.counts[corebus.EventSkillSwitch], s.out.PolicyTick)
		}
		field := func(name string) []float32 {
			f, _ := s.bank.Contract.Layout.Field(name)
			st := s.bank.Contract.Normaliser
			raw := make([]float32, f.Dim)
			for i := range raw {
				k := f.Offset + i
				raw[i] = s.out.Obs[k]*max(st.Std[k], st.Epsilon) + st.Mean[k]
			}
			return raw
		}
		if r := field(skills.FieldRemainingTime)[0]; !tc.wantTime(r) {
			t.Errorf("restart %s: remaining_time %v at 5.4 s", tc.restart, r)
		}
		if tc.restart != "0s" {
			for j, a := range field(skills.FieldPreviousAction) {
				if math.Abs(float64(a)) > 1e-6 {
					t.Fatalf("restart %s: previous_action[%d] = %v, want 0", tc.restart, j, a)
				}
			}
		}
	}
}
