package core

import (
	"math"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// SwitchConfig sets when a navigation skill gives way to another: when the height map shows a
// wall on its route (Switcher says which side of the way to the goal a wall blocks), or when it
// has made no progress towards the goal for a while.
type SwitchConfig struct {
	Enabled bool
	// Clearance is how far (m) terrain may rise above the ground under the base before it counts
	// as a wall: a box the "over" skill steps across stays below it, a fence does not.
	Clearance float64
	// Ahead is how far in front of the base (m) the height map is searched.
	Ahead float64
	// Cooldown is the least time between two switches, so the robot does not dither.
	Cooldown time.Duration
	// StallAfter is how long a running skill may make no progress towards the goal before its
	// route counts as blocked too (a wall the height map cannot see, a skill that dithers);
	// 0 turns the progress check off.
	StallAfter time.Duration
	// MinProgress is how much closer to the goal (m) counts as progress.
	MinProgress float64
	// Detour is how far (m) moving across the way to the goal counts as progress too, as when
	// the robot goes round a fence after a switch: the distance to the goal then stays or grows
	// for seconds while the skill gets through. 0: only getting closer counts.
	Detour float64
	// GoalRadius is the distance to the goal (m) within which the robot has arrived: from then
	// until the next goal or run no progress is not a stall (a skill that does not stop walks on
	// past the goal; its route is not blocked for that).
	GoalRadius float64
	// Restart, when positive, hands over at a standstill instead of blending: the targets go to
	// the default pose (inside the slew limit) and stay there this long, then the new skill
	// starts as a run does (no previous action, the episode clock of the remaining-time input at
	// zero). Skills are trained on episodes that start standing; taken over mid-stride beside a
	// wall, a skill meets a state its data never showed.
	Restart time.Duration
	// KeepMeasured lets a skill whose way round a wall blocks run on when it was measured to get
	// through the matching evaluation world itself (its goal rate there from the start: it met
	// the same wall on its own) at least as well as any candidate after a switch there, and it
	// started the run (a skill switched to stands where its rates were not measured): a skill
	// that reacts to the wall is not taken off it. A stall still switches.
	KeepMeasured bool
}

// DefaultSwitchConfig switches on 0.3 m walls within 0.5 m, or after 3 s without getting 0.1 m
// closer to a goal further than 0.25 m away or 0.2 m across the way to it, at most once a
// second, and hands over at a standstill held 0.5 s. Measured on the navigation set's per-route
// clones, from the right one with the right side fenced (30 runs each): without the detour a
// third skill took over 15 times in 30 runs from the one going round (57% at the goal, 83% with
// it); blending instead of the standstill, 67% at the goal with 8 falls, and with both sides
// fenced 20% with 13 falls (77% and 6 with the standstill). Dual-Force banks measured gained
// 0-10 points from the standstill, none lost.
func DefaultSwitchConfig() SwitchConfig {
	return SwitchConfig{
		Enabled: true, Clearance: 0.3, Ahead: 0.5, Cooldown: time.Second,
		StallAfter: 3 * time.Second, MinProgress: 0.1, Detour: 0.2, GoalRadius: 0.25,
		Restart: 500 * time.Millisecond, KeepMeasured: true,
	}
}

func (s *SwitchConfig) validate() error {
	switch {
	case !(s.Clearance > 0) || !(s.Ahead > 0) || s.Ahead > skills.HeightMapExtent:
		return errConfigf("switching: clearance %v m must be positive, the look-ahead %v m in (0, %v]", s.Clearance, s.Ahead, skills.HeightMapExtent)
	case s.Cooldown < 0 || s.StallAfter < 0 || s.Restart < 0:
		return errConfigf("switching: cooldown %v, stall time %v and restart hold %v must not be negative", s.Cooldown, s.StallAfter, s.Restart)
	case !(s.MinProgress > 0) || !(s.GoalRadius >= 0) || !(s.Detour >= 0) || math.IsInf(s.MinProgress+s.GoalRadius+s.Detour, 0):
		return errConfigf("switching: minimum progress %v m must be positive, the goal radius %v m and the detour %v m non-negative", s.MinProgress, s.GoalRadius, s.Detour)
	}
	return nil
}

// Measured is what evaluation measured of each latent of a bank, as far as choosing a skill
// needs it. LatentMeasures reads it from the latents' metadata; a bank format that stores the
// measurements elsewhere satisfies it directly (LoadOptions).
type Measured interface {
	// Passed reports that the latent passed the evaluation filter (>= 50% of the expert).
	Passed(latent int) bool
	// Route is the route the latent was measured to take past an obstacle: one of
	// corebus.RouteLeft, RouteRight, RouteOver, or 0 when unknown.
	Route(latent int) corebus.Routes
	// Success is the latent's measured goal-reach rate in the named evaluation world, or, under
	// skills.AfterSwitchWorld of its name, after a switch made because of what blocks there.
	Success(latent int, world string) (rate float64, ok bool)
	// OnlinePsi is the latent's successor features measured in rollouts, nil when not measured.
	OnlinePsi(latent int) []float32
}

// LatentMeasures reads Measured from b's latent metadata: the filter's verdict (a latent never
// filtered counts as passed, so an unevaluated bank still runs), the route from a "left",
// "right" or "over" tag (dualforce eval writes the measured route as one), the goal-reach rate
// per evaluation world and after a switch there (skills.LatentInfo.GoalRate; unknown in a world
// the latent was not evaluated in, and always in a format v1 bank), and the online successor
// features.
func LatentMeasures(b *skills.Bank) Measured { return latentMeasures{b} }

type latentMeasures struct{ b *skills.Bank }

func (m latentMeasures) Passed(i int) bool {
	p := m.b.Latents[i].Info.PassedFilter
	return p == nil || *p
}

func (m latentMeasures) Route(i int) corebus.Routes {
	for _, t := range m.b.Latents[i].Info.Tags {
		for r, name := range routeTags {
			if t == name {
				return r
			}
		}
	}
	return 0
}

func (m latentMeasures) Success(i int, world string) (float64, bool) {
	r, ok := m.b.Latents[i].Info.GoalRate[world]
	return float64(r), ok
}

func (m latentMeasures) OnlinePsi(i int) []float32 { return m.b.Latents[i].Info.OnlinePsi }

var routeTags = map[corebus.Routes]string{corebus.RouteLeft: "left", corebus.RouteRight: "right", corebus.RouteOver: "over"}

// Evaluation worlds (sim/worlds) whose fences match a set of blocked routes: a skill's success
// there is the evidence that it gets through what blocks the robot now.
const (
	WorldObstacle   = "obstacle"             // a low box, no fences
	WorldFenceLeft  = "obstacle_fence_left"  // the left way round is fenced off
	WorldFenceRight = "obstacle_fence_right" // the right way round is fenced off
	WorldFenced     = "obstacle_fenced"      // both ways round are fenced off
)

// MatchingWorld names the evaluation world whose fences block what blocked blocks.
func MatchingWorld(blocked corebus.Routes) string {
	w, _ := matchingWorlds(blocked)
	return w
}

// matchingWorlds names the evaluation world whose fences block what blocked blocks, and the
// goal rates after a switch made there (skills.AfterSwitchWorld; constants: the control path
// does not allocate).
func matchingWorlds(blocked corebus.Routes) (world, afterSwitch string) {
	switch blocked & (corebus.RouteLeft | corebus.RouteRight) {
	case corebus.RouteLeft | corebus.RouteRight:
		return WorldFenced, WorldFenced + skills.AfterSwitchSuffix
	case corebus.RouteLeft:
		return WorldFenceLeft, WorldFenceLeft + skills.AfterSwitchSuffix
	case corebus.RouteRight:
		return WorldFenceRight, WorldFenceRight + skills.AfterSwitchSuffix
	}
	return WorldObstacle, WorldObstacle + skills.AfterSwitchSuffix
}

// Why a candidate won, as reported in SwitchReport.Chosen.
const (
	chosenSuccess     = "highest measured success in the matching world"
	chosenAfterSwitch = "highest measured success after a switch in the matching world"
	chosenSuccessTie  = "tied on measured success: farthest in SF space from the stuck skill"
	chosenDistance    = "no success measured: farthest in SF space from the stuck skill"
	chosenBankOrder   = "nothing measured: first clear route in bank order"
	// chosenStalledRoute: no route clear; the best (as above) on a route only a stall ruled out.
	chosenStalledRoute = "no clear route: the best candidate on a route ruled out only by a stall"
	chosenKept         = "the running skill: its measured success from the start in the matching world is the highest"
	reasonObstacle     = "obstacle blocks the current skill's route"
	reasonNoProgress   = "no progress towards the goal: the current skill's route counts as blocked"
	reasonNoCandidate  = "the current skill's route is blocked and no latent that passed evaluation is measured on a clear route: the skill keeps running"
	reasonKept         = "the current skill's route is blocked, but it was measured to get through the matching world at least as well as any candidate: it keeps running"
)

// switchOutcome is what next decided.
type switchOutcome uint8

const (
	keepSkill    switchOutcome = iota // nothing blocks the running skill (or a cooldown runs)
	switchSkill                       // give way to the returned latent
	noCandidate                       // blocked, with nowhere to go: reported once per blocked set
	keptMeasured                      // blocked, measured to get through: reported once per blocked set
)

// Switcher picks a skill whose route is clear when the running one's is blocked.
//
// Routes are sides of the line from where the run (or the current goal) began to the goal, not
// of the robot's heading: a fence beside the box blocks the left way round wherever on that way
// the robot stands and however it is turned, where in the robot's own frame the wall would lie
// ahead of every sector. A route once seen blocked stays blocked until the next goal or run, so
// that with both sides fenced the robot does not turn back to the side it just left.
type Switcher struct {
	cfg    SwitchConfig
	ahead  [skills.HeightMapPoints]bool // cells in front of the base, within cfg.Ahead
	centre int                          // the cell under the base: the ground reference
	last   time.Duration
	armed  bool
	// The route: the line from origin along the unit vector dir (towards the goal), set at the
	// first policy tick of a run or goal; seen are the routes blocked since.
	routeSet    bool
	origin, dir [2]float64
	seen        corebus.Routes
	// stalls are the routes ruled out since by a skill's making no progress on them: blocked
	// like a wall, except that with no route clear of both another skill may try one of them.
	stalls corebus.Routes
	// Progress towards the goal: the distance and position at the last progress and when it
	// was made, and whether the robot has come within GoalRadius of this goal.
	tracking     bool
	progressDist float64
	progressed   [2]float64
	progressAt   time.Duration
	arrived      bool
	// The blocked routes last reported with no candidate (reported: since the last switch,
	// goal or run), so that a robot stuck for a while reports it once, not every cooldown.
	reported        bool
	reportedBlocked corebus.Routes
	// kept: the running skill was last kept at a wall on the strength of its measured success
	// (KeepMeasured); a stall then outranks the wall as the trigger.
	kept bool
	// tookOver: the running skill did not start the run or goal, a switch (the runtime's or an
	// operator's) handed it the robot on the way; its goal rates from the start do not speak
	// for it where it stands now.
	tookOver bool
}

// corridor is the half width (m) of the band along the line to the goal in which a wall the
// line runs into blocks the way over; walls further left or right block the way round on that
// side (blocked says which walls in the band do too).
const corridor = 0.15

func newSwitcher(cfg SwitchConfig) Switcher {
	s := Switcher{cfg: cfg}
	best := 1e9
	for i := range s.ahead {
		x, y := skills.HeightMapPoint(i)
		if d := x*x + y*y; d < best {
			best, s.centre = d, i
		}
		s.ahead[i] = x > 0.05 && x <= cfg.Ahead
	}
	return s
}

// restartProgress starts measuring progress afresh: a new skill, goal or run.
func (s *Switcher) restartProgress() { s.tracking = false }

// newRoute forgets the route and what blocked it: a new goal or run.
func (s *Switcher) newRoute() {
	s.routeSet, s.seen, s.stalls, s.arrived, s.reported, s.kept, s.tookOver = false, 0, 0, false, false, false, false
	s.restartProgress()
}

// handOver notes a switch to another skill on the way: its progress is measured afresh.
func (s *Switcher) handOver() {
	s.restartProgress()
	s.tookOver = true
}

// where is the base and its goal, as the switcher needs them: position (m, world), yaw (rad)
// and the goal's position.
type where struct {
	X, Y, Yaw    float64
	GoalX, GoalY float64
}

func (w *where) distance() float64 { return math.Hypot(w.GoalX-w.X, w.GoalY-w.Y) }

// stalled records progress and reports whether the robot, not yet arrived, has made none for
// StallAfter: come MinProgress closer to the goal, or moved Detour across the way to it from
// where it last made progress.
func (s *Switcher) stalled(now time.Duration, w *where) bool {
	dist := w.distance()
	if !s.tracking || dist < s.progressDist-s.cfg.MinProgress || s.detoured(w) {
		s.tracking, s.progressDist, s.progressAt = true, dist, now
		s.progressed = [2]float64{w.X, w.Y}
	}
	s.arrived = s.arrived || dist <= s.cfg.GoalRadius
	return s.cfg.StallAfter > 0 && !s.arrived && now-s.progressAt >= s.cfg.StallAfter
}

// detoured reports that the robot has moved Detour across the line from where it last made
// progress to the goal: round something, not stuck in front of it.
func (s *Switcher) detoured(w *where) bool {
	if s.cfg.Detour <= 0 {
		return false
	}
	gx, gy := w.GoalX-s.progressed[0], w.GoalY-s.progressed[1]
	n := math.Hypot(gx, gy)
	if n < 1e-3 {
		return false
	}
	across := (gx*(w.Y-s.progressed[1]) - gy*(w.X-s.progressed[0])) / n
	return math.Abs(across) >= s.cfg.Detour
}

// setRoute fixes the route's line from where the base is now towards the goal; with the goal
// under the base, its heading stands in.
func (s *Switcher) setRoute(w *where) {
	s.routeSet, s.origin = true, [2]float64{w.X, w.Y}
	dx, dy := w.GoalX-w.X, w.GoalY-w.Y
	if n := math.Hypot(dx, dy); n > 1e-3 {
		s.dir = [2]float64{dx / n, dy / n}
		return
	}
	sin, cos := math.Sincos(w.Yaw)
	s.dir = [2]float64{cos, sin}
}

// blocked returns the routes the height map shows a wall on: cells ahead of the base whose
// terrain rises more than Clearance above the ground under it, by which side of the route's
// line they lie on. Walls within the corridor block the way over only when the line runs into
// them (cells on both sides of it, or on it); walls in the corridor on one side only stand
// beside the way and block that side's way round. A fence along the box comes that close to
// the line when the box and the goal lie off the line on opposite sides, and a skill crossing
// the box passes beside it: counted as a wall on the way over, it took that skill off a route
// it gets through (an "over" clone with the right side fenced: 97% alone, 90% switching so).
func (s *Switcher) blocked(hm *[skills.HeightMapPoints]float32, w *where) corebus.Routes {
	ux, uy := s.dir[0], s.dir[1]
	sin, cos := math.Sincos(w.Yaw)
	var r, inCorridor corebus.Routes
	ground := hm[s.centre]
	for i, ahead := range s.ahead {
		if !ahead || float64(hm[i]-ground) <= s.cfg.Clearance {
			continue
		}
		x, y := skills.HeightMapPoint(i)
		px, py := w.X+cos*x-sin*y-s.origin[0], w.Y+sin*x+cos*y-s.origin[1]
		switch lateral := ux*py - uy*px; {
		case lateral > corridor:
			r |= corebus.RouteLeft
		case lateral < -corridor:
			r |= corebus.RouteRight
		case lateral > 0:
			inCorridor |= corebus.RouteLeft
		case lateral < 0:
			inCorridor |= corebus.RouteRight
		default:
			inCorridor |= corebus.RouteLeft | corebus.RouteRight
		}
	}
	if inCorridor == corebus.RouteLeft|corebus.RouteRight {
		return r | corebus.RouteOver
	}
	return r | inCorridor
}

// next decides whether the running bank skill gives way, and to which latent. The report says
// what was blocked, what was weighed, and why the winner; with no candidate (noCandidate, once
// per blocked set) what was blocked.
func (s *Switcher) next(now time.Duration, m Measured, latents int, active corebus.ActiveSkill,
	hm *[skills.HeightMapPoints]float32, w *where, rep *corebus.SwitchReport) (int, switchOutcome) {
	if !s.cfg.Enabled || active.Source != corebus.SkillBank {
		return 0, keepSkill
	}
	if !s.routeSet {
		s.setRoute(w)
	}
	s.seen |= s.blocked(hm, w)
	stalled := s.stalled(now, w)
	if s.armed && now-s.last < s.cfg.Cooldown {
		return 0, keepSkill
	}
	cur := m.Route(active.Index)
	switch {
	case cur != 0 && s.seen&cur != 0 && !(stalled && s.kept):
		// (A skill kept running at a wall that then stalls gives way for the stall.)
		rep.Trigger = corebus.TriggerObstacle
	case stalled:
		rep.Trigger = corebus.TriggerNoProgress
		s.stalls |= cur
	default:
		return 0, keepSkill
	}
	blocked := s.seen | s.stalls
	var afterSwitch string
	rep.Blocked = blocked
	rep.World, afterSwitch = matchingWorlds(blocked)
	rep.Considered, rep.Chosen = 0, ""
	rankCandidates(m, latents, active.Index, blocked, afterSwitch, rep)
	triedStalled := false
	if rep.Considered == 0 && s.stalls&^s.seen != 0 {
		// No route is clear. A stall says that one skill got nowhere, not that nothing gets
		// through, where a wall does: rather than stand, try another skill on a route only
		// stalls ruled out (an "over" skill stuck at the box beside a fence: another may climb it).
		rankCandidates(m, latents, active.Index, s.seen, afterSwitch, rep)
		triedStalled = true
	}
	s.last, s.armed = now, true
	// What was measured is the skill meeting a wall the matching world's fences stand for (one
	// on its way round) in a run it started; a stall says it does not get through, whatever was
	// measured. (A skill switched to at the right fence, kept by its rate from the start with
	// both sides fenced, reached the goal in 2 of 30 runs; 25 switching on to an "over" skill.)
	s.kept = s.cfg.KeepMeasured && rep.Trigger == corebus.TriggerObstacle && !s.tookOver &&
		cur&s.seen&(corebus.RouteLeft|corebus.RouteRight) != 0 && keepRunning(m, active.Index, rep)
	if rep.Considered == 0 || s.kept {
		// Nothing to switch to, or nothing measured to do better: try again after a cooldown
		// rather than on every policy tick, and say so when what is blocked has changed. The
		// progress check runs on: the skill kept must still get somewhere.
		if s.reported && s.reportedBlocked == blocked {
			return 0, keepSkill
		}
		s.reported, s.reportedBlocked = true, blocked
		if s.kept {
			rep.Chosen = chosenKept
			return 0, keptMeasured
		}
		return 0, noCandidate
	}
	s.handOver()
	rep.Chosen = whyChosen(rep)
	if triedStalled {
		rep.Chosen = chosenStalledRoute
	}
	s.reported = false
	return int(rep.Candidates[0].Index), switchSkill
}

// keepRunning reports that the active latent, which passed evaluation, was measured to reach
// the goal from the start in the world matching what blocks it (rep.World: it met the same wall
// there on its own) at least as often as the best of rep's candidates after a switch there (or
// from the start where that was not measured), or that no candidate's success is measured. It
// then heads rep's candidates, the one chosen.
func keepRunning(m Measured, active int, rep *corebus.SwitchReport) bool {
	own, ok := m.Success(active, rep.World)
	if !ok || !m.Passed(active) || rep.Considered > 0 && rep.Candidates[0].Success > float32(own) {
		return false
	}
	copy(rep.Candidates[1:], rep.Candidates[:corebus.MaxReportedCandidates-1])
	rep.Candidates[0] = corebus.Candidate{Index: int32(active), Success: float32(own), Distance: 0}
	rep.Considered++
	return true
}

// rankCandidates puts in rep every latent other than the active one that passed evaluation
// and whose measured route is none of blocked, ranked (insertRanked) by its measured success
// after a switch in the world matching what blocks (afterSwitch) where measured, else from the
// start there (rep.World), then distance in SF space from the active one.
func rankCandidates(m Measured, latents, active int, blocked corebus.Routes, afterSwitch string, rep *corebus.SwitchReport) {
	stuck := m.OnlinePsi(active)
	for i := range latents {
		r := m.Route(i)
		if i == active || r == 0 || r&blocked != 0 || !m.Passed(i) {
			continue
		}
		cand := corebus.Candidate{Index: int32(i), Success: float32(math.NaN()), Distance: float32(math.NaN())}
		// Measured after a switch is measured where the candidate would take over; a rate from
		// the start stands in where that was not measured.
		if rate, ok := m.Success(i, afterSwitch); ok {
			cand.Success, cand.AfterSwitch = float32(rate), true
		} else if rate, ok := m.Success(i, rep.World); ok {
			cand.Success = float32(rate)
		}
		if psi := m.OnlinePsi(i); psi != nil && len(psi) == len(stuck) {
			cand.Distance = float32(distance(psi, stuck))
		}
		insertRanked(rep, cand)
	}
}

// better ranks a over b: higher measured success (after a switch or from the start, whichever
// the candidate has: Candidate.Success), then farther from the stuck skill in SF space;
// measured beats unmeasured; bank order breaks ties (candidates arrive in it).
func better(a, b *corebus.Candidate) bool {
	as, bs := !isNaN32(a.Success), !isNaN32(b.Success)
	if as != bs {
		return as
	}
	if as && a.Success != b.Success {
		return a.Success > b.Success
	}
	ad, bd := !isNaN32(a.Distance), !isNaN32(b.Distance)
	if ad != bd {
		return ad
	}
	return ad && a.Distance > b.Distance
}

// insertRanked keeps the best MaxReportedCandidates in rep, best first, and counts every one.
func insertRanked(rep *corebus.SwitchReport, c corebus.Candidate) {
	n := min(rep.Considered, corebus.MaxReportedCandidates)
	rep.Considered++
	pos := n
	for pos > 0 && better(&c, &rep.Candidates[pos-1]) {
		pos--
	}
	if pos == corebus.MaxReportedCandidates {
		return
	}
	copy(rep.Candidates[pos+1:], rep.Candidates[pos:min(n, corebus.MaxReportedCandidates-1)])
	rep.Candidates[pos] = c
}

func whyChosen(rep *corebus.SwitchReport) string {
	best := &rep.Candidates[0]
	switch {
	case !isNaN32(best.Success):
		switch {
		case rep.Considered > 1 && rep.Candidates[1].Success == best.Success:
			return chosenSuccessTie
		case best.AfterSwitch:
			return chosenAfterSwitch
		}
		return chosenSuccess
	case !isNaN32(best.Distance):
		return chosenDistance
	}
	return chosenBankOrder
}

func isNaN32(v float32) bool { return v != v }

func distance(a, b []float32) float64 {
	var d float64
	for k := range a {
		e := float64(a[k]) - float64(b[k])
		d += e * e
	}
	return math.Sqrt(d)
}

func eventSwitch(from, to corebus.ActiveSkill, reason string) corebus.Event {
	return corebus.Event{Kind: corebus.EventSkillSwitch, From: from, To: to, Reason: reason}
}
