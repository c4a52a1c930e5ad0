package eval

import (
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/trainer/collect"
)

// Descriptors are what a skill was measured to do, on simulator ground truth: means over the
// states of a rollout, the one it ended in included (Rollout), or over the rollouts (Summary).
type Descriptors struct {
	// Height is the base above the terrain under it (m).
	Height float64 `json:"mean_height"`
	// ForwardVel and LateralVel are the base velocity along its own x and y axes (m/s); YawRate
	// the base's angular velocity about its z axis (rad/s).
	ForwardVel float64 `json:"forward_vel"`
	LateralVel float64 `json:"lateral_vel"`
	YawRate    float64 `json:"yaw_rate"`
}

// descriptorMean accumulates Descriptors over states.
type descriptorMean struct {
	sum Descriptors
	n   int
}

// add takes one state and the base's height above the terrain there.
func (d *descriptorMean) add(s *behave.State, height float64) {
	d.sum.Height += height
	d.sum.ForwardVel += s.LinVel[0]
	d.sum.LateralVel += s.LinVel[1]
	d.sum.YawRate += s.AngVel[2]
	d.n++
}

// mean is the mean of the states added (zero without any).
func (d *descriptorMean) mean() Descriptors {
	if d.n == 0 {
		return Descriptors{}
	}
	n := float64(d.n)
	return Descriptors{Height: d.sum.Height / n, ForwardVel: d.sum.ForwardVel / n, LateralVel: d.sum.LateralVel / n, YawRate: d.sum.YawRate / n}
}

// Height classes of locomotion skills. The datasets' trots stand at 0.19 m (low), 0.24 m
// (middle, the standing pose) and 0.28 m (high) (trainer/collect's plan); a skill is classed by
// its mean base height against the midpoints.
const (
	TagLow    = "low"
	TagMiddle = "middle"
	TagHigh   = "high"

	lowMiddleHeight  = (0.19 + 0.24) / 2
	middleHighHeight = (0.24 + 0.28) / 2
)

// HeightClass names the height class of a mean base height h (m).
func HeightClass(h float64) string {
	switch {
	case h < lowMiddleHeight:
		return TagLow
	case h > middleHighHeight:
		return TagHigh
	}
	return TagMiddle
}

// Route tags of navigation skills: the way past the box, named as the routes are.
const (
	TagLeft  = string(behave.RouteLeft)
	TagRight = string(behave.RouteRight)
	TagOver  = string(behave.RouteOver)
)

// measuredTag reports the tags MeasuredTags may give: an evaluation replaces them in a bank.
func measuredTag(tag string) bool {
	switch tag {
	case TagLow, TagMiddle, TagHigh, TagLeft, TagRight, TagOver:
		return true
	}
	return false
}

// MeasuredTags are the tags of what a latent was measured to do in an evaluation of task in
// world: for locomotion its height class; for navigation, in the task's own world only (a fence
// forces the way round), its route past the box (RouteTag), if it has one.
func MeasuredTags(task collect.Task, world string, s *Summary) []string {
	switch {
	case len(s.Rollouts) == 0:
		return nil
	case task.Name == collect.TaskLocomotion:
		return []string{HeightClass(s.Descriptors.Height)}
	case task.Name == collect.TaskNavigation && world == task.World:
		if r := RouteTag(s.Rollouts); r != "" {
			return []string{r}
		}
	}
	return nil
}

// RouteTag is the measured route of a navigation latent: the route past the box (TagLeft,
// TagRight or TagOver) of a strict majority -- more than half -- of the rollouts that reached
// the goal after passing the box. It is "" when none did, or when no route has more than half
// of them (a 2-2 split, or 2-1-1 of four, is no clear route: switching on it would bet the robot
// on a coin toss). Rollouts that missed the goal do not count: the tag says which way the latent
// gets through, not which way it wanders.
func RouteTag(runs []Rollout) string {
	counts := map[behave.Route]int{}
	passed := 0
	for _, r := range runs {
		if r.GoalStep >= 0 && r.Route != "" {
			counts[r.Route]++
			passed++
		}
	}
	for route, n := range counts {
		if 2*n > passed {
			return string(route)
		}
	}
	return ""
}
