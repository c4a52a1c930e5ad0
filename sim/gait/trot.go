package gait

import (
	"errors"
	"fmt"
	"math"
)

// Params sets a trot. Velocities are in the base frame.
type Params struct {
	VX         float64 `json:"vx"`          // commanded forward base velocity, m/s
	VY         float64 `json:"vy"`          // commanded lateral base velocity, m/s
	YawRate    float64 `json:"yaw_rate"`    // commanded yaw rate, rad/s
	Height     float64 `json:"height"`      // base height above flat ground, m
	StepHeight float64 `json:"step_height"` // swing foot clearance, m
	Period     float64 `json:"period"`      // one full gait cycle, s; 0 means stand with all four feet down
	Duty       float64 `json:"duty"`        // fraction of the cycle a foot is on the ground (0.5 = trot)
	// RaibertGain moves the touchdown point by gain*(measured - commanded velocity) to catch a
	// base that runs too fast or too slow.
	RaibertGain float64 `json:"raibert_gain"`
	// Kp is the joint PD stiffness (Nm/rad) the targets are tracked with; stance legs get their
	// share of the body weight added to the target as tau/Kp so the PD does not sag. 0 disables.
	Kp float64 `json:"kp"`
	// Mass is the robot mass carried by the stance legs, kg.
	Mass float64 `json:"mass"`
	// Climb adapts the trot to steps in Base.Terrain, such as a box it walks over: a foot
	// stands on the ground it landed on, lands clear of a step's edge and swings StepHeight
	// above the highest ground on its way, and the base rises with the ground ahead of the
	// feet as far as the lowest foot still reaches (see raise). Off, feet follow the terrain
	// under their targets at a base height over flat ground: the gait on flat ground and of
	// every dataset collected before Climb, which stays bit for bit what it was.
	Climb bool `json:"climb,omitempty"`
}

// DefaultParams is a middle-height trot in place.
func DefaultParams() Params {
	return Params{Height: 0.235, StepHeight: 0.05, Period: 0.36, Duty: 0.5, RaibertGain: 0.03, Kp: 4, Mass: 2.5}
}

// Validate reports parameters no Solo12 leg can follow.
func (p Params) Validate() error {
	switch {
	case p.Height < 0.12 || p.Height > 0.32:
		return fmt.Errorf("gait: base height %.3f m outside 0.12..0.32", p.Height)
	case p.StepHeight < 0 || p.StepHeight > 0.12:
		return fmt.Errorf("gait: step height %.3f m outside 0..0.12", p.StepHeight)
	case p.Period < 0 || (p.Period > 0 && p.Period < 0.1):
		return fmt.Errorf("gait: period %.3f s: 0 (stand) or at least 0.1", p.Period)
	case p.Period > 0 && (p.Duty <= 0 || p.Duty >= 1):
		return fmt.Errorf("gait: duty %.2f outside (0,1)", p.Duty)
	case p.Kp < 0 || p.Mass < 0:
		return fmt.Errorf("gait: negative Kp or mass")
	}
	return nil
}

// Base is what the controller observes of the base, in the base frame.
type Base struct {
	LinVel [3]float64
	AngVel [3]float64
	// Terrain is the ground height (m) under a point (x, y) of the base frame's horizontal
	// plane, relative to the ground the base height is measured from; nil is flat ground.
	// Stance feet stand on it and swing feet travel from the height under their take-off point
	// to the height under their landing point, StepHeight above the straight line between.
	Terrain func(x, y float64) float64
}

func (b *Base) ground(x, y float64) float64 {
	if b.Terrain == nil {
		return 0
	}
	return b.Terrain(x, y)
}

// Trot generates joint position targets for a trot: diagonal pairs (FL,HR) and (FR,HL) alternate.
type Trot struct {
	P     Params
	phase float64 // in [0,1)
	// stand is each foot's foothold when Climb is set: where it stands, or will land while it
	// swings; lift is where a swinging foot took off.
	stand, lift [NumLegs]foothold
	// rise is how far the base is raised over flat ground when Climb is set.
	rise float64
}

// foothold is where a foot stands: the ground height under it, and how far (m, along the base's
// x) it was moved from its stride's nominal point to keep off a step's edge.
type foothold struct{ ground, shift float64 }

// SetPhase moves the gait clock to phase p (taken modulo 1): episodes start at different points
// of the cycle.
func (t *Trot) SetPhase(p float64) { t.phase = p - math.Floor(p) }

// Phase is the gait clock in [0, 1): 0 is the (FL, HR) pair's touchdown.
func (t *Trot) Phase() float64 { return t.phase }

// NewTrot returns a trot generator at phase 0.
func NewTrot(p Params) (*Trot, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Trot{P: p}, nil
}

// legPhaseOffset puts the diagonal pairs half a cycle apart.
var legPhaseOffset = [NumLegs]float64{FL: 0, FR: 0.5, HL: 0.5, HR: 0}

const gravity = 9.81

// Targets advances the gait by dt seconds and returns the 12 joint position targets.
func (t *Trot) Targets(dt float64, base Base) ([12]float64, error) {
	p := t.P
	if p.Period > 0 {
		t.phase = math.Mod(t.phase+dt/p.Period, 1)
	}
	stanceTime := p.Duty * p.Period
	var feet [NumLegs][3]float64
	var ground [NumLegs]float64 // the ground height under each foot, or under a swing foot's path
	var inStance [NumLegs]bool
	for leg := range NumLegs {
		nom := NominalFoot(leg, p.Height)
		// Stance feet slide backwards under the hip at the commanded base velocity (including the
		// velocity the yaw rate gives this hip); half a stride either side of the nominal point.
		vx := p.VX - p.YawRate*nom[1]
		vy := p.VY + p.YawRate*nom[0]
		half := [2]float64{vx * stanceTime / 2, vy * stanceTime / 2}
		foot := nom
		inStance[leg] = true
		if p.Period > 0 {
			psi := math.Mod(t.phase+legPhaseOffset[leg], 1)
			if psi < p.Duty {
				s := psi / p.Duty
				foot[0] += half[0] * (1 - 2*s)
				foot[1] += half[1] * (1 - 2*s)
				if p.Climb {
					// A planted foot stays where it landed, on that ground, even where a base
					// slower than its command slides the foot's target back over an edge.
					f := t.stand[leg]
					t.lift[leg] = f
					foot[0] += f.shift
					ground[leg] = f.ground
				} else {
					ground[leg] = base.ground(foot[0], foot[1])
				}
				foot[2] += ground[leg]
			} else {
				inStance[leg] = false
				s := (psi - p.Duty) / (1 - p.Duty)
				// Raibert: land further ahead when the base runs ahead of the command.
				catchX := p.RaibertGain * (base.LinVel[0] - p.VX)
				catchY := p.RaibertGain * (base.LinVel[1] - p.VY)
				forward, lift := swingProfile(s)
				foot[0] += -half[0] + forward*(2*half[0]+catchX)
				foot[1] += -half[1] + forward*(2*half[1]+catchY)
				if p.Climb {
					// The foot lands where the base, at its measured velocity, will have
					// carried the landing point by touchdown, moved off a step's edge; it
					// swings StepHeight above its take-off ground and the ground just ahead.
					ahead := (1 - s) * (1 - p.Duty) * p.Period
					mx := base.LinVel[0] - base.AngVel[2]*nom[1]
					my := base.LinVel[1] + base.AngVel[2]*nom[0]
					x, y := nom[0]+half[0]+catchX+mx*ahead, nom[1]+half[1]+catchY+my*ahead
					shift := base.footholdShift(x, y)
					from, to := t.lift[leg], foothold{ground: base.ground(x+shift, y), shift: shift}
					t.stand[leg] = to
					foot[0] += from.shift + forward*(to.shift-from.shift)
					ground[leg] = from.ground + forward*(to.ground-from.ground)
					top := max(from.ground, base.highest(foot[0], foot[1], swingLook)) + p.StepHeight
					foot[2] += ground[leg] + lift*(top-ground[leg])
				} else {
					from := base.ground(nom[0]-half[0], nom[1]-half[1])
					to := base.ground(nom[0]+half[0]+catchX, nom[1]+half[1]+catchY)
					foot[2] += from + forward*(to-from) + p.StepHeight*lift
				}
			}
		}
		feet[leg] = foot
	}
	if p.Climb {
		t.raise(dt, base, feet, ground)
	}
	var q [12]float64
	for leg, foot := range feet {
		if p.Climb {
			// Lower the feet under the raised base, into the reach of legs a step makes too
			// short or too long.
			foot[2] -= t.rise
			foot = ClampReach(leg, foot)
		}
		ql, err := LegIK(leg, foot)
		if errors.Is(err, ErrUnreachable) {
			// A gait that does not climb can still be asked for a foot on a high box it
			// walks into (a wandering behaviour beside a 0.11 m box): the leg tracks the
			// nearest target in its reach, as a climbing gait's do, rather than stop the
			// collection. Targets in reach are untouched, so no earlier dataset changes.
			ql, err = LegIK(leg, ClampReach(leg, foot))
		}
		if err != nil {
			return q, fmt.Errorf("leg %d at %.3f: %w", leg, foot, err)
		}
		if inStance[leg] && p.Kp > 0 {
			ql = addGravityShare(leg, ql, p, t.stanceLegs())
		}
		copy(q[3*leg:3*leg+3], ql[:])
	}
	return q, nil
}

// Terrain-aware trotting (Params.Climb); distances in m along the base's x, times in s.
const (
	// stepShort is how far short of a step up a foot lands at least: the next swing must carry
	// it forward before it can lift it over the edge, as a front leg cannot lift a foot high
	// behind its hip (its HFE joint reaches its limit).
	stepShort = 0.06
	// stepBeyond is how far beyond a step's edge a foot lands at least: a swing that falls a
	// little short still lands on the step, not on its edge, and one that steps down lands
	// clear of the edge it steps off.
	stepBeyond = 0.03
	// swingLook is how far ahead of a swing foot the ground it must clear is looked for: far
	// enough for the joints to lift the foot before it gets there.
	swingLook = 0.06
	// riseLook is how far ahead of each foot the base looks for higher ground to rise to: about
	// the stride, so the base is up before a front foot swings onto a step.
	riseLook = 0.15
	// riseReach is how far the base rises above the lowest foot's ground at most: its leg then
	// still reaches down with a stride's worth of slack, where a base level over the highest foot
	// would leave it hanging.
	riseReach = 0.07
	// riseRate (m/s) is how fast the base rises and falls to the height it aims for.
	riseRate = 0.5
	// terrainProbe is the spacing of the terrain samples that find a step's edge.
	terrainProbe = 0.005
)

// raise moves the base's rise over flat ground towards the highest ground under or just ahead of
// the feet (feet, base frame, and ground, the height under each foot or its swing), up to
// riseReach above the lowest foot, at riseRate. A higher base gives the legs room to lift a
// foot onto a step: Solo12's front legs fold their feet up only under and before the hip.
func (t *Trot) raise(dt float64, base Base, feet [NumLegs][3]float64, ground [NumLegs]float64) {
	low, high := math.Inf(1), math.Inf(-1)
	for leg, f := range feet {
		low = min(low, ground[leg])
		high = max(high, base.highest(f[0], f[1], riseLook))
	}
	aim, step := min(high, low+riseReach), riseRate*dt
	t.rise = min(max(aim, t.rise-step), t.rise+step)
}

// highest is the highest ground under a foot at base-frame point (x, y), from the foot's back
// edge to ahead in front of it.
func (b *Base) highest(x, y, ahead float64) float64 {
	h := b.ground(x-FootRadius, y)
	for i := range int(math.Round(ahead/terrainProbe)) + 1 {
		h = max(h, b.ground(x+float64(i)*terrainProbe, y))
	}
	return h
}

// footholdShift is how far along x to move a foothold at base-frame point (x, y) to keep it off
// a step's edge: back to stepShort before a step up that begins less than stepShort ahead, and
// forward to stepBeyond past an edge less than stepBeyond behind it or a step down less than
// stepBeyond ahead.
func (b *Base) footholdShift(x, y float64) float64 {
	g := b.ground(x, y)
	for i := 1; i <= int(math.Round(stepShort/terrainProbe)); i++ {
		if d := float64(i) * terrainProbe; b.ground(x+d, y) > g {
			return d - terrainProbe - stepShort // the edge is within a probe before x+d
		}
	}
	for i := 1; i <= int(math.Round(stepBeyond/terrainProbe)); i++ {
		d := float64(i) * terrainProbe
		if b.ground(x-d, y) != g {
			return stepBeyond - d + terrainProbe // the edge is within a probe after x-d
		}
		if b.ground(x+d, y) < g {
			return stepBeyond + d // the edge is within a probe before x+d
		}
	}
	return 0
}

// swingRise is the fraction of a swing spent lifting the foot, and again lowering it.
const swingRise = 0.3

// swingProfile is a swing foot's horizontal progress and lift (both 0..1) at swing phase s: it
// rises first, travels while up and lands last, so it clears an edge anywhere along its path,
// where a sine arc would scrape the edge it steps from or onto.
func swingProfile(s float64) (forward, lift float64) {
	smooth := func(x float64) float64 { return (1 - math.Cos(math.Pi*min(max(x, 0), 1))) / 2 }
	return smooth((s - swingRise/2) / (1 - swingRise)), smooth(min(s, 1-s) / swingRise)
}

// stanceLegs is how many feet carry the body: all four when standing, a diagonal pair in a trot.
func (t *Trot) stanceLegs() float64 {
	if t.P.Period == 0 {
		return 4
	}
	return float64(NumLegs) * t.P.Duty
}

// addGravityShare offsets a stance leg's targets by tau/Kp, tau = J^T f with f the leg's share of
// the body weight pushing down on the ground, so the PD holds the pose instead of sagging by it.
func addGravityShare(leg int, q [3]float64, p Params, legs float64) [3]float64 {
	j := LegJacobian(leg, q)
	fz := -p.Mass * gravity / legs
	for c := range 3 {
		q[c] += j[2][c] * fz / p.Kp
	}
	return q
}
