package collect

import (
	"math"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/worlds"
)

// Task names.
const (
	TaskLocomotion = "locomotion"
	TaskNavigation = "navigation"
)

// Task is what every episode of a dataset is asked to do, and the withheld reward that measures
// it (stored for evaluation; the algorithm never trains on it).
type Task struct {
	Name string `json:"name"`
	// World is the world episodes run in: a built-in world's name (sim/worlds) or a world file;
	// navigation episodes each draw their own jittered layout from it.
	World          string  `json:"world"`
	EpisodeSeconds float64 `json:"episode_seconds"`
	// Command is the locomotion command every observation carries (vx, vy in m/s, yaw rate in
	// rad/s): the task, not the behaviour, so a behaviour that turns or crouches is seen
	// deviating from the same command the expert follows.
	Command [3]float32 `json:"command,omitempty"`
	// GoalYaw is the navigation goal heading (rad about world z) encoded in the target field.
	GoalYaw float64 `json:"goal_yaw,omitempty"`
	// Reward parameters: locomotion r = exp(-(v - command_vx)^2 / sigma^2) with v the base's
	// forward speed over the step (displacement along its heading / 20 ms); navigation
	// r = progress_scale * (distance to goal before - after) + goal_bonus while inside the goal.
	TrackingSigma float64 `json:"tracking_sigma,omitempty"`
	ProgressScale float64 `json:"progress_scale,omitempty"`
	GoalBonus     float64 `json:"goal_bonus,omitempty"`
}

// RewardDoc describes the task reward for a manifest.
func (t *Task) RewardDoc() string {
	if t.Name == TaskNavigation {
		return "progress_scale * (distance to goal at s - distance at s') + goal_bonus if s' is inside the goal disc; distances of the base in the world plane (ground truth)"
	}
	return "exp(-(v - command_vx)^2 / tracking_sigma^2), v = base displacement between s and s' along the base heading at s, divided by the 20 ms policy period (ground truth)"
}

// Goal is the navigation goal (world x, y, yaw) of a layout; zero without a goal.
func (t *Task) Goal(l *worlds.Layout) [3]float64 {
	if l == nil || l.Goal == nil {
		return [3]float64{}
	}
	return [3]float64{l.Goal.X, l.Goal.Y, t.GoalYaw}
}

// Reward is the withheld task reward of the transition from s to ns (ground truth), for the
// dataset and for evaluation alike.
func (t *Task) Reward(s, ns *behave.State, l *worlds.Layout) float64 {
	if t.Name == TaskNavigation {
		g := t.Goal(l)
		before := math.Hypot(g[0]-s.Pos[0], g[1]-s.Pos[1])
		after := math.Hypot(g[0]-ns.Pos[0], g[1]-ns.Pos[1])
		r := t.ProgressScale * (before - after)
		if ReachedGoal(ns, l) {
			r += t.GoalBonus
		}
		return r
	}
	v := forwardSpeed(s, ns)
	e := (v - float64(t.Command[0])) / t.TrackingSigma
	return math.Exp(-e * e)
}

// forwardSpeed is the base's displacement from s to ns along its heading at s, per second.
func forwardSpeed(s, ns *behave.State) float64 {
	yaw := s.RPY[2]
	dx, dy := ns.Pos[0]-s.Pos[0], ns.Pos[1]-s.Pos[1]
	return (math.Cos(yaw)*dx + math.Sin(yaw)*dy) / (ns.Time - s.Time)
}
