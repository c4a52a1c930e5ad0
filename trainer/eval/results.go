package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Path is a rollout's base path seen from above, one point per state: world position (m) and
// the base's height above the terrain under it (m).
type Path struct {
	X      []float64 `json:"x"`
	Y      []float64 `json:"y"`
	Height []float64 `json:"height"`
}

// ErrResult reports an evaluation-results file that is not one.
var ErrResult = errors.New("eval: malformed results")

// Limits of what DecodeResult accepts: far above any real evaluation (thousands of latents, 30
// rollouts each), low enough that a hostile file cannot make a reader allocate without bound.
const (
	maxResultBytes = 1 << 30
	maxFeatures    = 1024 // successor-feature dimension
)

// ReadResult reads and checks the evaluation results at path (eval.json, as dualforce eval
// writes it).
func ReadResult(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	res, err := DecodeResult(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// DecodeResult reads one evaluation result as JSON from r and checks it (Result.Validate).
func DecodeResult(r io.Reader) (*Result, error) {
	dec := json.NewDecoder(io.LimitReader(r, maxResultBytes))
	var res Result
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResult, err)
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return &res, nil
}

// Validate checks that a result is whole and consistent: a known task, at least one subject,
// every number finite and every rate a fraction, successor features of one dimension, a square
// distance matrix over the subjects, a filter reference among them, paths whose series have one
// length, counts after a switch that add up. Readers can then index and plot without further checks.
func (r *Result) Validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("%w: %s", ErrResult, fmt.Sprintf(format, a...)) }
	if _, ok := taskLayouts[r.Task]; !ok {
		return bad("task %q", r.Task)
	}
	n := len(r.Subjects)
	switch {
	case n == 0:
		return bad("no subjects")
	case len(r.Features) == 0:
		return bad("no feature fields")
	case len(r.Subjects[0].Psi) == 0 || len(r.Subjects[0].Psi) > maxFeatures:
		return bad("%d successor features", len(r.Subjects[0].Psi))
	case r.Rollouts < 1:
		return bad("%d rollouts per latent", r.Rollouts)
	case !finite(r.EpisodeSeconds, r.Discount, r.Seconds, r.FilterFraction):
		return bad("non-finite episode length, discount, time or filter fraction")
	case len(r.Distances) != n:
		return bad("%d distance rows for %d subjects", len(r.Distances), n)
	case r.FilterReference != nil && (*r.FilterReference < 0 || *r.FilterReference >= n):
		return bad("filter reference %d of %d subjects", *r.FilterReference, n)
	}
	for i, row := range r.Distances {
		if len(row) != n {
			return bad("distance row %d has %d columns for %d subjects", i, len(row), n)
		}
		for _, v := range row {
			if !finite(v) || v < 0 {
				return bad("distance row %d: %v", i, v)
			}
		}
	}
	if a := r.AfterSwitch; a != nil {
		if err := a.validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrResult, err)
		}
	}
	dim := len(r.Subjects[0].Psi)
	for i := range r.Subjects {
		if err := r.Subjects[i].validate(dim, r.FilterReference != nil); err != nil {
			return fmt.Errorf("%w: subject %d (%q): %w", ErrResult, i, r.Subjects[i].Label, err)
		}
	}
	return nil
}

func (s *Summary) validate(dim int, filtered bool) error {
	d := &s.Descriptors
	switch {
	case len(s.Psi) != dim:
		return fmt.Errorf("%d online SFs, the first subject %d", len(s.Psi), dim)
	case !finite(s.Psi...):
		return errors.New("non-finite online SFs")
	case !finite(s.MeanReturn, s.StdReturn, s.MeanSteps, s.VelRMSENorm, d.Height, d.ForwardVel, d.LateralVel, d.YawRate):
		return errors.New("non-finite return, steps, estimator error or descriptor")
	case !fraction(s.FallRate) || !fraction(s.GoalRate):
		return fmt.Errorf("fall rate %v, goal rate %v: want fractions", s.FallRate, s.GoalRate)
	case s.TimeToGoal != nil && !(finite(*s.TimeToGoal) && *s.TimeToGoal >= 0):
		return fmt.Errorf("time to goal %v", *s.TimeToGoal)
	case filtered && s.Passed == nil:
		return errors.New("no filter verdict in a filtered result")
	}
	for world, rate := range s.WorldGoalRate {
		if world == "" || !fraction(rate) {
			return fmt.Errorf("goal rate %v in world %q", rate, world)
		}
	}
	for k := range s.Rollouts {
		ro := &s.Rollouts[k]
		if !finite(ro.Return, ro.Descriptors.Height, ro.Descriptors.ForwardVel, ro.Descriptors.LateralVel, ro.Descriptors.YawRate) || !finite(ro.Psi...) {
			return fmt.Errorf("rollout %d: non-finite return, SFs or descriptor", k)
		}
		for i, sw := range ro.Switches {
			if !finite(sw.Time, sw.Pos[0], sw.Pos[1]) || sw.Time < 0 || sw.From < 0 || sw.To < 0 || sw.Considered < 0 {
				return fmt.Errorf("rollout %d: switch %d at %v s, position %v, latents %d -> %d of %d considered", k, i, sw.Time, sw.Pos, sw.From, sw.To, sw.Considered)
			}
		}
		if g := ro.Goal; g != nil && !(finite(g[0], g[1], ro.GoalDistance) && g[2] >= 0 && ro.GoalDistance >= 0) {
			return fmt.Errorf("rollout %d: goal %v, ended %v m from it", k, *g, ro.GoalDistance)
		}
		if p := ro.Path; p != nil {
			if len(p.X) != len(p.Y) || len(p.X) != len(p.Height) {
				return fmt.Errorf("rollout %d: path of %d x, %d y, %d heights", k, len(p.X), len(p.Y), len(p.Height))
			}
			if !finite(p.X...) || !finite(p.Y...) || !finite(p.Height...) {
				return fmt.Errorf("rollout %d: non-finite path", k)
			}
		}
	}
	return nil
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func fraction(v float64) bool { return v >= 0 && v <= 1 }
