package robotboard_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// hw/perception states the height-map grid without importing skills: it must be skills' grid.
func TestGridAgreesWithSkills(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"rows", perception.GridRows, skills.HeightMapRows},
		{"cols", perception.GridCols, skills.HeightMapCols},
		{"points", perception.GridPoints, skills.HeightMapPoints},
		{"spacing", perception.GridSpacing, skills.HeightMapSpacing},
		{"extent", perception.GridExtent, skills.HeightMapExtent},
	} {
		if c.got != c.want {
			t.Errorf("%s: perception %v, skills %v", c.name, c.got, c.want)
		}
	}
	// The order the perception doc promises: index r*cols + c at x = -extent + r*spacing (forward),
	// y = -extent + c*spacing (left).
	for i := range perception.GridPoints {
		r, c := i/perception.GridCols, i%perception.GridCols
		x := -perception.GridExtent + float64(r)*perception.GridSpacing
		y := -perception.GridExtent + float64(c)*perception.GridSpacing
		if sx, sy := skills.HeightMapPoint(i); math.Abs(sx-x) > 1e-12 || math.Abs(sy-y) > 1e-12 {
			t.Fatalf("point %d: perception doc (%v, %v), skills (%v, %v)", i, x, y, sx, sy)
		}
	}
}

func TestLoadScenario(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(good, []byte("name: mine\nbox: {x: 1, y: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nfriction: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg, name string
		wantErr   error
		errText   string
	}{
		{"flat", "flat", nil, ""},
		{"obstacle_fenced", "obstacle_fenced", nil, ""},
		{good, "mine", nil, ""},
		{bad, "", worlds.ErrInvalid, bad},
		{"no_such_world", "", nil, "obstacle_fenced"},        // the error lists what there is
		{"missing.yaml", "", os.ErrNotExist, "missing.yaml"}, // a file's name: no such file
		{filepath.Join(dir, "gone"), "", os.ErrNotExist, "gone"},
	} {
		s, err := robotboard.LoadScenario(tc.arg)
		switch {
		case tc.name != "":
			if err != nil || s.Name != tc.name {
				t.Errorf("%s: %v, %v", tc.arg, s, err)
			}
		case err == nil:
			t.Errorf("%s: no error", tc.arg)
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: %v, want %v", tc.arg, err, tc.wantErr)
		case !strings.Contains(err.Error(), tc.errText):
			t.Errorf("%s: %q does not mention %q", tc.arg, err, tc.errText)
		}
	}
}

// lockstepHost drives a Robot in-process the way the runtime's lockstep driver does: payloads
// in, payloads out, one tick each, no transport.
type lockstepHost struct {
	r      *robotboard.Robot
	buf    [proto.CommandLen]byte
	sensor proto.Sensor
	index  uint16
}

const lockstepSession = 0x5117

func (h *lockstepHost) connect(t testing.TB) {
	t.Helper()
	in := proto.Init{Version: proto.Version, SessionID: lockstepSession}
	if err := in.Marshal(h.buf[:proto.InitLen]); err != nil {
		t.Fatal(err)
	}
	out := h.r.Step(h.buf[:proto.InitLen])
	for i := 0; len(out) != proto.AckLen; i++ {
		if i > 100 {
			t.Fatalf("no ack; board %v", h.r.Board().State())
		}
		out = h.r.Step(nil)
	}
}

func (h *lockstepHost) exchange(t testing.TB, c *proto.Command) *proto.Sensor {
	c.SessionID, c.Index = lockstepSession, h.index
	h.index++
	if _, err := c.Marshal(h.buf[:]); err != nil {
		t.Fatal(err)
	}
	if err := h.sensor.Unmarshal(h.r.Step(h.buf[:])); err != nil {
		t.Fatalf("board %v: %v", h.r.Board().State(), err)
	}
	return &h.sensor
}

// The in-process lockstep API: stand up through the wire format and the joint map, watch the
// ground truth, and read perception on flat ground.
func TestLockstepInProcess(t *testing.T) {
	r := newRobot(t, robotboard.Config{Seed: 1})
	h := &lockstepHost{r: r}
	h.connect(t)
	st := newStander(r.JointOffsets())
	heights := newHeightRange()
	in := h.exchange(t, st.next(nil))
	for !st.holding() || heights.max < heights.min || r.Truth().Time < 4*time.Second {
		in = h.exchange(t, st.next(in))
		if st.holding() {
			heights.add(r.Truth().Pos[2])
		}
		if r.Truth().Time > 10*time.Second {
			t.Fatal("never stood up")
		}
	}
	heights.check(t)
	truth := r.Truth()
	t.Logf("after %v: %+v, heights %.4f..%.4f", truth.Time, truth, heights.min, heights.max)
	if truth.Fell || r.Board().State() != board.StateActiveControl || r.Err() != nil {
		t.Fatalf("truth %+v, board %v, err %v", truth, r.Board().State(), r.Err())
	}
	if math.Hypot(truth.LinVel[0], truth.LinVel[1]) > 0.01 || truth.Tilt > 0.05 {
		t.Fatalf("not standing still: %+v", truth)
	}
	var d perception.Datagram
	r.Perceive(&d)
	if d.Seq != 1 || d.Stamp != truth.Time || d.Position != truth.Pos || math.Abs(d.Yaw-truth.Yaw) > 1e-9 {
		t.Fatalf("perception %+v, truth %+v", d, truth)
	}
	if onBox := checkHeights(t, &d, r.Layout()); onBox != 0 {
		t.Fatalf("%d points on a box in a flat world", onBox)
	}
	r.Perceive(&d)
	if d.Seq != 2 {
		t.Fatalf("second sample seq %d", d.Seq)
	}
	cmd := st.next(in)
	if allocs := testing.AllocsPerRun(200, func() {
		h.exchange(t, cmd)
		r.Perceive(&d)
		_ = r.Truth()
	}); allocs != 0 {
		t.Fatalf("%v allocations per lockstep tick", allocs)
	}
}

// Perception in lockstep sees a known box from wherever the robot is, and sample times follow
// simulated time.
func TestPerceiveBox(t *testing.T) {
	r := newRobot(t, robotboard.Config{Scenario: boxWorld(t)})
	var d perception.Datagram
	for k := range 5 {
		for range robotboard.DefaultPerceptionPeriod {
			r.Step(nil)
		}
		r.Perceive(&d)
		if want := time.Duration(k+1) * robotboard.DefaultPerceptionPeriod * time.Millisecond; d.Stamp != want || d.Seq != uint64(k+1) {
			t.Fatalf("sample %d: seq %d at %v, want %v", k, d.Seq, d.Stamp, want)
		}
		if onBox := checkHeights(t, &d, r.Layout()); onBox < 5 {
			t.Fatalf("only %d points on the box", onBox)
		}
	}
}

// Without commands the motors stay off: the robot sinks onto its body, which Truth reports.
func TestTruthReportsAFall(t *testing.T) {
	r := newRobot(t, robotboard.Config{})
	if tr := r.Truth(); tr.Fell || math.Abs(tr.Pos[2]-sim.StandingHeight()) > 1e-9 || tr.Tilt > 1e-9 || tr.Time != 0 {
		t.Fatalf("at power-on: %+v", tr)
	}
	for range 2000 {
		r.Step(nil)
	}
	if tr := r.Truth(); !tr.Fell || tr.Time != 2*time.Second {
		t.Fatalf("after 2 s with the motors off: %+v", tr)
	}
}

// With a host delay the robot has sunk onto the ground, motors off, when New returns, its
// encoders still counting from the power-on pose, and a host can then connect and stand it up.
func TestHostDelay(t *testing.T) {
	if _, err := robotboard.New(robotboard.Config{HostDelay: -time.Millisecond, Logger: quietLog()}); err == nil {
		t.Error("a negative host delay was taken")
	}
	atOnce := newRobot(t, robotboard.Config{})
	r := newRobot(t, robotboard.Config{HostDelay: 1500 * time.Millisecond})
	if tr := r.Truth(); tr.Time != 1500*time.Millisecond || tr.Pos[2] > 0.1 {
		t.Fatalf("after the host delay: %+v, want 1.5 s and the base on the ground", tr)
	}
	if r.JointOffsets() != atOnce.JointOffsets() {
		t.Errorf("offsets %v, want the power-on pose %v", r.JointOffsets(), atOnce.JointOffsets())
	}
	h := &lockstepHost{r: r}
	h.connect(t)
	st := newStander(r.JointOffsets())
	in := h.exchange(t, st.next(nil))
	hr := newHeightRange()
	for !st.holding() {
		in = h.exchange(t, st.next(in))
		if st.tick > standUpTicks {
			hr.add(r.Truth().Pos[2])
		}
	}
	hr.check(t)
}

func BenchmarkLockstepTick(b *testing.B) {
	for _, substeps := range []int{1, 10} {
		b.Run(map[int]string{1: "substeps=1", 10: "substeps=10"}[substeps], func(b *testing.B) {
			r := newRobot(b, robotboard.Config{Substeps: substeps})
			h := &lockstepHost{r: r}
			h.connect(b)
			st := newStander(r.JointOffsets())
			in := h.exchange(b, st.next(nil))
			for !st.holding() {
				in = h.exchange(b, st.next(in))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				in = h.exchange(b, st.next(in))
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ticks/s")
		})
	}
}

func BenchmarkPerceive(b *testing.B) {
	r := newRobot(b, robotboard.Config{Scenario: boxWorld(b)})
	var d perception.Datagram
	b.ReportAllocs()
	for b.Loop() {
		r.Perceive(&d)
	}
}
