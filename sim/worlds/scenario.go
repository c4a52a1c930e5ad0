package worlds

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gopkg.in/yaml.v3"
)

// ErrInvalid marks every error caused by a malformed or inconsistent scenario.
var ErrInvalid = errors.New("invalid scenario")

// Defaults applied to fields a scenario leaves out.
const (
	DefaultFriction       = 1.0
	DefaultBoxLength      = 0.3  // along x, m
	DefaultBoxWidth       = 0.8  // along y, m
	DefaultBoxHeight      = 0.05 // low enough for a high-stepping gait to cross
	DefaultGoalRadius     = 0.25
	DefaultFenceHeight    = 0.6
	DefaultFenceLength    = 2.0
	DefaultFenceThickness = 0.05
)

// Limits that keep a scenario physically sensible for a 2.5 kg robot.
const (
	maxExtent   = 100.0 // |x|, |y| of anything, m
	maxSize     = 10.0  // any box dimension, m
	maxFriction = 5.0
	// defaultStartClear is the least distance (m) between a start and any box or fence
	// footprint (Jitter.StartClear); minStartClear the least a world may set: nearer, the
	// standing robot's feet (0.2 m ahead of the base) are inside the footprint.
	defaultStartClear = 0.35
	minStartClear     = 0.2
	startDraws        = 64 // tries for a jittered start clear of the boxes drawn
	maxScenarioB      = 1 << 20
)

// Scenario is the YAML schema of a world. Absent optional sections mean "none"; absent
// numeric fields take the defaults above.
type Scenario struct {
	Name     string   `yaml:"name"`
	Friction float64  `yaml:"friction"` // ground friction coefficient
	Start    Pose2D   `yaml:"start"`
	Box      *BoxSpec `yaml:"box"`
	Goal     *Goal    `yaml:"goal"`
	Fences   *Fences  `yaml:"fences"`
	Jitter   *Jitter  `yaml:"jitter"`
}

// Pose2D is a planar pose: position and heading about +z.
type Pose2D struct {
	X   float64 `yaml:"x"`
	Y   float64 `yaml:"y"`
	Yaw float64 `yaml:"yaw"`
}

// BoxSpec is the obstacle: a box resting on the ground, centred at (X, Y), sides along the
// world axes.
type BoxSpec struct {
	X      float64 `yaml:"x"`
	Y      float64 `yaml:"y"`
	Length float64 `yaml:"length"` // along x
	Width  float64 `yaml:"width"`  // along y
	Height float64 `yaml:"height"`
}

// Goal is a disc on the ground the robot should reach.
type Goal struct {
	X      float64 `yaml:"x"`
	Y      float64 `yaml:"y"`
	Radius float64 `yaml:"radius"`
}

// Fences are walls in line with the box that block going around it: the left fence runs from
// the box's left edge towards +y, the right one from its right edge towards -y.
type Fences struct {
	Left      bool    `yaml:"left"`
	Right     bool    `yaml:"right"`
	Height    float64 `yaml:"height"`
	Length    float64 `yaml:"length"`
	Thickness float64 `yaml:"thickness"`
}

// Jitter is seeded randomisation: each coordinate moves uniformly within +-value. The start's
// is for data collection: episodes that begin anywhere in a region before the box show the
// routes from states a run reaches only after it went elsewhere first (beside a fence, when the
// runtime switches skills); evaluation's worlds start where the robot does. The start region
// may reach the box: a start drawn within StartClear of the box (or a fence) as laid out is
// drawn again, so the region covers the ground up to the box wherever the box's own jitter
// put it.
type Jitter struct {
	BoxX     float64 `yaml:"box_x"`
	BoxY     float64 `yaml:"box_y"`
	GoalX    float64 `yaml:"goal_x"`
	GoalY    float64 `yaml:"goal_y"`
	StartX   float64 `yaml:"start_x"`
	StartY   float64 `yaml:"start_y"`
	StartYaw float64 `yaml:"start_yaw"` // rad
	// StartClear (m; 0.35 when 0, at least 0.2) is how near a box or fence a drawn start may
	// come, and the world's own start the box at any of its jitter. Nearer than the default,
	// collection shows the routes from where the runtime's switch leaves the robot: standing
	// in front of a fence, about the body's length from it.
	StartClear float64 `yaml:"start_clear"`
}

// Parse decodes one YAML scenario strictly (unknown fields are errors), applies defaults and
// validates it. Every failure wraps ErrInvalid.
func Parse(data []byte) (*Scenario, error) {
	if len(data) > maxScenarioB {
		return nil, fmt.Errorf("%w: %d bytes is larger than the %d-byte limit", ErrInvalid, len(data), maxScenarioB)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty document", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one YAML document", ErrInvalid)
	}
	s.applyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Scenario) applyDefaults() {
	if s.Friction == 0 {
		s.Friction = DefaultFriction
	}
	if b := s.Box; b != nil {
		b.Length = orDefault(b.Length, DefaultBoxLength)
		b.Width = orDefault(b.Width, DefaultBoxWidth)
		b.Height = orDefault(b.Height, DefaultBoxHeight)
	}
	if g := s.Goal; g != nil {
		g.Radius = orDefault(g.Radius, DefaultGoalRadius)
	}
	if f := s.Fences; f != nil {
		f.Height = orDefault(f.Height, DefaultFenceHeight)
		f.Length = orDefault(f.Length, DefaultFenceLength)
		f.Thickness = orDefault(f.Thickness, DefaultFenceThickness)
	}
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

type checker struct{ errs []error }

func (c *checker) finite(field string, v, limit float64) {
	if math.IsNaN(v) || math.Abs(v) > limit {
		c.errs = append(c.errs, fmt.Errorf("%s = %v: want a finite value within +-%g", field, v, limit))
	}
}

func (c *checker) positive(field string, v, limit float64) {
	if !(v > 0 && v <= limit) {
		c.errs = append(c.errs, fmt.Errorf("%s = %v: want 0 < value <= %g", field, v, limit))
	}
}

func (c *checker) nonNegative(field string, v, limit float64) {
	if !(v >= 0 && v <= limit) {
		c.errs = append(c.errs, fmt.Errorf("%s = %v: want 0 <= value <= %g", field, v, limit))
	}
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Validate checks ranges and consistency, including that no jitter can put the start or the
// goal on the box. It expects defaults to be applied (Parse does that).
func (s *Scenario) Validate() error {
	var c checker
	c.positive("friction", s.Friction, maxFriction)
	c.finite("start.x", s.Start.X, maxExtent)
	c.finite("start.y", s.Start.Y, maxExtent)
	c.finite("start.yaw", s.Start.Yaw, 2*math.Pi)
	if b := s.Box; b != nil {
		c.finite("box.x", b.X, maxExtent)
		c.finite("box.y", b.Y, maxExtent)
		c.positive("box.length", b.Length, maxSize)
		c.positive("box.width", b.Width, maxSize)
		c.positive("box.height", b.Height, maxSize)
	}
	if g := s.Goal; g != nil {
		c.finite("goal.x", g.X, maxExtent)
		c.finite("goal.y", g.Y, maxExtent)
		c.positive("goal.radius", g.Radius, maxSize)
	}
	if f := s.Fences; f != nil {
		if s.Box == nil {
			c.fail("fences: need a box to stand in line with")
		}
		if !f.Left && !f.Right {
			c.fail("fences: neither left nor right is set; drop the section instead")
		}
		c.positive("fences.height", f.Height, maxSize)
		c.positive("fences.length", f.Length, maxSize)
		c.positive("fences.thickness", f.Thickness, maxSize)
	}
	if j := s.Jitter; j != nil {
		c.nonNegative("jitter.box_x", j.BoxX, maxSize)
		c.nonNegative("jitter.box_y", j.BoxY, maxSize)
		c.nonNegative("jitter.goal_x", j.GoalX, maxSize)
		c.nonNegative("jitter.goal_y", j.GoalY, maxSize)
		c.nonNegative("jitter.start_x", j.StartX, maxSize)
		c.nonNegative("jitter.start_y", j.StartY, maxSize)
		c.nonNegative("jitter.start_yaw", j.StartYaw, math.Pi)
		if j.StartClear != 0 && !(j.StartClear >= minStartClear && j.StartClear <= maxSize) {
			c.fail("jitter.start_clear %g m: want %g..%g (0: the default %g)", j.StartClear, minStartClear, maxSize, defaultStartClear)
		}
		if s.Box == nil && (j.BoxX != 0 || j.BoxY != 0) {
			c.fail("jitter.box_x/box_y: there is no box")
		}
		if s.Goal == nil && (j.GoalX != 0 || j.GoalY != 0) {
			c.fail("jitter.goal_x/goal_y: there is no goal")
		}
	}
	if len(c.errs) == 0 && s.Box != nil {
		s.checkClearOfBox(&c)
	}
	if len(c.errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(c.errs...))
	}
	return nil
}

// checkClearOfBox rejects scenarios where some jitter could place the goal on the box, or the
// box could come within the start clearance of the start. The start's own jitter is not
// counted: Layout draws a jittered start again until it is clear, and falls back to this start.
func (s *Scenario) checkClearOfBox(c *checker) {
	b, j := s.Box, s.jitter()
	clear := func(x, y, jx, jy, margin float64) bool {
		return math.Abs(x-b.X) > b.Length/2+j.BoxX+jx+margin || math.Abs(y-b.Y) > b.Width/2+j.BoxY+jy+margin
	}
	if margin := j.startClear(); !clear(s.Start.X, s.Start.Y, 0, 0, margin) {
		c.fail("start (%g, %g) is within %g m of the box at some jitter", s.Start.X, s.Start.Y, margin)
	}
	if g := s.Goal; g != nil && !clear(g.X, g.Y, j.GoalX, j.GoalY, g.Radius) {
		c.fail("goal (%g, %g) can overlap the box at some jitter", g.X, g.Y)
	}
}

func (s *Scenario) jitter() Jitter {
	if s.Jitter == nil {
		return Jitter{}
	}
	return *s.Jitter
}

// startClear is how near a box or fence a start may be.
func (j Jitter) startClear() float64 {
	if j.StartClear == 0 {
		return defaultStartClear
	}
	return j.StartClear
}

// Kind of a box in a Layout.
type Kind int

// Kinds of obstacle boxes.
const (
	KindBox Kind = iota
	KindFence
)

func (k Kind) String() string {
	if k == KindFence {
		return "fence"
	}
	return "box"
}

// Box is an axis-aligned box resting on the ground.
type Box struct {
	Name   string
	Kind   Kind
	Center [3]float64
	Half   [3]float64 // half sizes along x, y, z
}

// Layout is a scenario with every random choice made: what the simulator builds and what a
// plot draws.
type Layout struct {
	Name     string
	Friction float64
	Start    Pose2D
	Boxes    []Box
	Goal     *Goal
}

// Layout resolves the jitter with a seeded generator: the same seed gives the same layout.
func (s *Scenario) Layout(seed uint64) *Layout {
	rng := rand.New(rand.NewPCG(seed, 0x5eed_0f_d0a1f0ce))
	uniform := func(half float64) float64 {
		if half == 0 {
			return 0
		}
		return (2*rng.Float64() - 1) * half
	}
	j := s.jitter()
	l := &Layout{Name: s.Name, Friction: s.Friction, Start: s.Start}
	if b := s.Box; b != nil {
		x, y := b.X+uniform(j.BoxX), b.Y+uniform(j.BoxY)
		l.Boxes = append(l.Boxes, Box{
			Name: "box", Kind: KindBox,
			Center: [3]float64{x, y, b.Height / 2},
			Half:   [3]float64{b.Length / 2, b.Width / 2, b.Height / 2},
		})
		if f := s.Fences; f != nil {
			fence := func(name string, side float64) Box {
				return Box{
					Name: name, Kind: KindFence,
					Center: [3]float64{x, y + side*(b.Width/2+f.Length/2), f.Height / 2},
					Half:   [3]float64{f.Thickness / 2, f.Length / 2, f.Height / 2},
				}
			}
			if f.Left {
				l.Boxes = append(l.Boxes, fence("fence_left", +1))
			}
			if f.Right {
				l.Boxes = append(l.Boxes, fence("fence_right", -1))
			}
		}
	}
	if g := s.Goal; g != nil {
		l.Goal = &Goal{X: g.X + uniform(j.GoalX), Y: g.Y + uniform(j.GoalY), Radius: g.Radius}
	}
	// Drawn last, so that a world without start jitter lays out as it did before it existed
	// (uniform(0) draws nothing, and the start validation requires is clear at the first try).
	for range startDraws {
		start := Pose2D{X: s.Start.X + uniform(j.StartX), Y: s.Start.Y + uniform(j.StartY), Yaw: s.Start.Yaw + uniform(j.StartYaw)}
		if l.clearOfBoxes(start.X, start.Y, j.startClear()) {
			l.Start = start
			break
		}
	}
	return l
}

// clearOfBoxes reports whether (x, y) is more than margin from every box's footprint along x
// or along y.
func (l *Layout) clearOfBoxes(x, y, margin float64) bool {
	for _, b := range l.Boxes {
		if math.Abs(x-b.Center[0]) <= b.Half[0]+margin && math.Abs(y-b.Center[1]) <= b.Half[1]+margin {
			return false
		}
	}
	return true
}
