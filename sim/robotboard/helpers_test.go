package robotboard_test

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/perception"
	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
)

// The standing controller's numbers (spec/solo12.md: HAA 0, HFE +-0.8, KFE -+1.6, about 0.235 m).
const (
	standKp        = 4.0  // Nm/rad
	standKd        = 0.15 // Nm*s/rad
	standUpTicks   = 1500 // smooth move from wherever the legs are to the standing pose
	standingHeight = 0.235
	heightBand     = 0.03
	// settleTicks after the move ends, the base must be inside the band.
	settleTicks = 500
)

// stander is what a host program does to stand Solo12 up, in joint space through the real
// joint<->motor map: enable every motor, wait for the rotor alignments, then move smoothly from
// the measured pose to the standing pose and hold it, with a gravity feed-forward.
type stander struct {
	m       solo12.Map
	js      solo12.JointState
	jc      solo12.JointCommand
	cmd     proto.Command
	target  [solo12.NumJoints]float64
	ff      [solo12.NumJoints]float64
	from    [solo12.NumJoints]float64
	moving  bool
	tick    int // ticks since the move started
	maxWarn solo12.GainWarning
}

func newStander(offsets [solo12.NumJoints]float64) *stander {
	s := &stander{m: solo12.Map{Offset: offsets}, target: sim.StandingPose()}
	// Each foot carries a quarter of the weight: tau = -J^T f with f = (0, 0, m*g/4) on the foot.
	f := sim.TotalMass * proto.StandardGravity / 4
	for l := range solo12.Leg(solo12.NumLegs) {
		jac := l.Jacobian(l.Angles(&s.target))
		for k := range solo12.JointsPerLeg {
			s.ff[l.Joint(solo12.JointKind(k))] = -jac[2][k] * f
		}
	}
	for d := range s.cmd.Drivers {
		s.cmd.Drivers[d].Mode = (proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2).WithTimeout(5)
	}
	for j := range s.jc.ISat {
		s.jc.ISat[j] = solo12.MaxCurrent
	}
	return s
}

// next returns the command answering sensor packet in (nil: the first command, before any).
func (s *stander) next(in *proto.Sensor) *proto.Command {
	if in != nil {
		s.m.ReadSensor(in, &s.js)
		if !s.moving && solo12.Ready(in) == solo12.AllJoints {
			s.moving, s.from = true, s.js.Q
		}
	}
	if s.moving {
		// A cosine blend: zero velocity at both ends; the feed-forward ramps in with it.
		a := min(float64(s.tick)/standUpTicks, 1)
		blend := (1 - math.Cos(math.Pi*a)) / 2
		rate := 0.0
		if a < 1 {
			rate = math.Pi / 2 * math.Sin(math.Pi*a) / (standUpTicks * 1e-3)
		}
		for j := range s.jc.Q {
			s.jc.Q[j] = s.from[j] + blend*(s.target[j]-s.from[j])
			s.jc.Qd[j] = rate * (s.target[j] - s.from[j])
			s.jc.Tau[j] = blend * s.ff[j]
			s.jc.Kp[j], s.jc.Kd[j] = standKp, standKd
		}
		s.tick++
	}
	if w := s.m.WriteCommand(&s.jc, &s.cmd); !w.IsZero() {
		s.maxWarn = w
	}
	return &s.cmd
}

// holding reports that the move has ended settleTicks ago: the base must stand by now.
func (s *stander) holding() bool { return s.moving && s.tick >= standUpTicks+settleTicks }

// heightRange tracks the ground-truth base height while holding.
type heightRange struct{ min, max float64 }

func newHeightRange() heightRange { return heightRange{math.Inf(1), math.Inf(-1)} }

func (h *heightRange) add(z float64) { h.min, h.max = min(h.min, z), max(h.max, z) }

func (h heightRange) check(t testing.TB) {
	t.Helper()
	if !(h.min >= standingHeight-heightBand && h.max <= standingHeight+heightBand) {
		t.Errorf("base height while holding %.4f..%.4f m, want %.3f +- %.3f", h.min, h.max, standingHeight, heightBand)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newRobot(t testing.TB, cfg robotboard.Config) *robotboard.Robot {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	r, err := robotboard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// serve runs r on conn until the test ends and returns its server.
func serve(t testing.TB, r *robotboard.Robot, conn link.Conn, opts robotboard.ServeOptions) *robotboard.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLog()
	}
	srv, err := r.Serve(conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("robot server: %v", err)
		}
	})
	return srv
}

// perceptionLink is a receiver on a loopback port and a sender aimed at it.
func perceptionLink(t testing.TB) (*perception.Receiver, *perception.Sender) {
	t.Helper()
	rx, err := perception.Listen("127.0.0.1:0", perception.ReceiverOptions{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rx.Close(); err != nil {
			t.Error(err)
		}
	})
	tx, err := perception.Dial(rx.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return rx, tx
}

// boxWorld has a 0.1 m box just ahead of the start, inside the front rows of the height map.
func boxWorld(t testing.TB) *worlds.Scenario {
	t.Helper()
	s, err := worlds.Parse([]byte("name: box_ahead\nbox: {x: 0.72, y: 0, length: 0.6, width: 0.85, height: 0.1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkHeights compares a perception sample's height map with the layout's boxes seen from the
// sample's own pose (exact without noise), using the grid the perception package documents.
// Points within 1 cm of a box edge are skipped. It returns how many points saw a box top.
func checkHeights(t testing.TB, d *perception.Datagram, l *worlds.Layout) (onBox int) {
	t.Helper()
	const edge = 0.01
	c, s := math.Cos(d.Yaw), math.Sin(d.Yaw)
	for i, got := range d.Heights {
		r, col := i/perception.GridCols, i%perception.GridCols
		x := -perception.GridExtent + float64(r)*perception.GridSpacing
		y := -perception.GridExtent + float64(col)*perception.GridSpacing
		wx, wy := d.Position[0]+c*x-s*y, d.Position[1]+s*x+c*y
		ground, nearEdge := 0.0, false
		if l != nil {
			for _, b := range l.Boxes {
				dx := math.Abs(wx-b.Center[0]) - b.Half[0]
				dy := math.Abs(wy-b.Center[1]) - b.Half[1]
				if math.Abs(dx) < edge && dy < edge || math.Abs(dy) < edge && dx < edge {
					nearEdge = true
				}
				if dx < 0 && dy < 0 {
					ground = max(ground, b.Center[2]+b.Half[2])
				}
			}
		}
		if nearEdge {
			continue
		}
		if ground > 0 {
			onBox++
		}
		if want := ground - d.Position[2]; math.Abs(float64(got)-want) > 1e-4 {
			t.Errorf("seq %d: height at (%.1f, %.1f) = %.4f, want %.4f (ground %.2f, base z %.4f)", d.Seq, x, y, got, want, ground, d.Position[2])
		}
	}
	return onBox
}

// waitAccepted waits until the receiver has accepted n datagrams.
func waitAccepted(t testing.TB, rx *perception.Receiver, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rx.Stats().Accepted < n {
		if time.Now().After(deadline) {
			t.Fatalf("perception: %+v after 5 s, want %d accepted", rx.Stats(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
