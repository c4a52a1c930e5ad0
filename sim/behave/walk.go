package behave

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/gait"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// walker runs a trot with heading hold: the held heading integrates the commanded yaw rate (plus
// an optional random walk), and the yaw rate sent to the gait corrects the measured heading
// towards it, so a straight walker stays straight and a turning one turns at its rate.
type walker struct {
	spec    Spec
	trot    *gait.Trot
	am      skills.ActionMap
	rng     *rand.Rand
	heading float64
	started bool
	// drift is the random walk HeadingDrift adds to the heading a walker holds or a navigator
	// aims at.
	drift float64
	// boost is the integrated velocity error (base frame x, y) added to the gait's command.
	boost [2]float64
	// layout, when it has boxes, is the terrain the feet are placed on (ground truth); pose is
	// the base's world x, y, yaw at the current step, for mapping base-frame foot points.
	layout  *worlds.Layout
	pose    [3]float64
	terrain func(x, y float64) float64
}

// maxBoost bounds the integrated velocity correction relative to the command (anti-windup).
const maxBoost = 1.5

func newWalker(spec Spec, am skills.ActionMap, layout *worlds.Layout, rng *rand.Rand) (*walker, error) {
	t, err := gait.NewTrot(spec.Gait)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	// Episodes start at a random point of the gait cycle.
	t.SetPhase(rng.Float64())
	w := &walker{spec: spec, trot: t, am: am, rng: rng}
	if layout != nil && len(layout.Boxes) > 0 {
		w.layout = layout
		w.terrain = w.groundAt
	}
	return w, nil
}

// groundAt is the terrain height under base-frame point (x, y) at the current pose.
func (w *walker) groundAt(x, y float64) float64 {
	s, c := math.Sincos(w.pose[2])
	return TerrainHeight(w.layout, w.pose[0]+c*x-s*y, w.pose[1]+s*x+c*y)
}

// TerrainHeight is the top of the highest box of l under world point (x, y), or 0 (the ground).
// Fences are walls, never footholds, and are left out.
func TerrainHeight(l *worlds.Layout, x, y float64) float64 {
	h := 0.0
	if l == nil {
		return h
	}
	for _, b := range l.Boxes {
		if b.Kind == worlds.KindBox && math.Abs(x-b.Center[0]) <= b.Half[0] && math.Abs(y-b.Center[1]) <= b.Half[1] {
			h = max(h, b.Center[2]+b.Half[2])
		}
	}
	return h
}

func (w *walker) Act(s *State, a *[skills.NumJoints]float32) error {
	if !w.started {
		w.heading, w.started = s.RPY[2], true
	}
	w.heading += w.spec.Gait.YawRate * PolicyPeriod
	yawRate := w.spec.Gait.YawRate + w.spec.HeadingGain*wrap(w.heading+w.wander()-s.RPY[2])
	return w.drive(s, w.spec.Gait.VX, w.spec.Gait.VY, yawRate, a)
}

// wander advances the heading drift by one policy period and returns it.
func (w *walker) wander() float64 {
	if d := w.spec.HeadingDrift; d > 0 {
		w.drift += d * math.Sqrt(PolicyPeriod) * w.rng.NormFloat64()
	}
	return w.drift
}

// drive advances the trot by one policy period at the given base-frame command and writes the
// action whose joint targets are the gait's, with the spec's action noise.
func (w *walker) drive(s *State, vx, vy, yawRate float64, a *[skills.NumJoints]float32) error {
	p := &w.trot.P
	if g := w.spec.SpeedGain; g > 0 {
		for i, v := range [2]float64{vx, vy} {
			lim := maxBoost*math.Abs(v) + 0.05
			w.boost[i] = min(max(w.boost[i]+g*(v-s.LinVel[i])*PolicyPeriod, -lim), lim)
		}
	}
	p.VX, p.VY, p.YawRate = vx+w.boost[0], vy+w.boost[1], yawRate
	p.Height = w.height(s.Time)
	w.pose = [3]float64{s.Pos[0], s.Pos[1], s.RPY[2]}
	q, err := w.trot.Targets(PolicyPeriod, gait.Base{LinVel: s.LinVel, AngVel: s.AngVel, Terrain: w.terrain})
	if err != nil {
		return fmt.Errorf("behave: %w", err)
	}
	var q32 [skills.NumJoints]float32
	for j, v := range q {
		q32[j] = float32(v)
	}
	if err := w.am.Actions(q32[:], a[:]); err != nil {
		return fmt.Errorf("behave: %w", err)
	}
	if n := w.spec.ActionNoise; n > 0 {
		for j := range a {
			a[j] = float32(min(max(float64(a[j])+n*w.rng.NormFloat64(), -1), 1))
		}
	}
	return nil
}

// height ramps the base height from standing to the spec's over RampTime (a cosine blend), so
// a low or high gait does not start with a jump of its targets.
func (w *walker) height(t float64) float64 {
	h0, h1 := sim.StandingHeight(), w.spec.Gait.Height
	if w.spec.RampTime <= 0 || t >= w.spec.RampTime {
		return h1
	}
	blend := (1 - math.Cos(math.Pi*t/w.spec.RampTime)) / 2
	return h0 + blend*(h1-h0)
}
