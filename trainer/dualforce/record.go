package dualforce

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/skillset"
)

// Keys of a Record. Per-skill values carry the skill's index: "phi_0",
// "sigma_0", and so on.
const (
	KeyObjective       = "vdw_objective"
	KeyMeanMinDistance = "mean_min_distance"
	keyConstraint      = "phi"
	keySigma           = "sigma"
	keyDistance        = "l"
	keyNearest         = "nearest"
	keyESS             = "ess"
	keyMaxW            = "max_w"
	keyValueLoss       = "value_loss"
	keyPolicyLoss      = "policy_loss"
	keyStaleError      = "stale_tv"
	// keyMassPrefix + a behaviour's name: the skill's weight on that
	// behaviour's transitions (BehaviourMassKey).
	keyMassPrefix = "mass_"
)

// BehaviourMassKey is the Record key of skill i's weight on the named
// behaviour's transitions ("mass_left_0"): written when the data carry
// behaviour labels, which the learners never see.
func BehaviourMassKey(behaviour string, i int) string {
	return skillset.SkillKey(keyMassPrefix+behaviour, i)
}

// Record is the metrics-log line of an iteration: one flat JSON object
// whose numbers a metrics.Series reads back column by column.
func (m Metrics) Record() map[string]metrics.Num {
	rec := map[string]metrics.Num{
		metrics.IterationKey: metrics.Num(m.Iteration),
		KeyObjective:         metrics.Num(m.Objective),
		KeyMeanMinDistance:   metrics.Num(m.MeanMinDistance),
	}
	for _, col := range []struct {
		key string
		x   []float64
	}{
		{keyConstraint, m.Constraint}, {keySigma, m.Sigma}, {keyDistance, m.Distance},
		{keyESS, m.ESS}, {keyMaxW, m.MaxW}, {keyValueLoss, m.ValueLoss}, {keyPolicyLoss, m.PolicyLoss},
		{keyStaleError, m.StaleError},
	} {
		for i, v := range col.x {
			rec[skillset.SkillKey(col.key, i)] = metrics.Num(v)
		}
	}
	for i, j := range m.Nearest {
		rec[skillset.SkillKey(keyNearest, i)] = metrics.Num(j)
	}
	return rec
}

// Figures a run draws from its metrics log.
const (
	// TrainingPlot is the paper's Dual-Force training-metrics row: the
	// constraint estimate of every skill against eps, the VdW objective and
	// the mean minimum successor-feature distance.
	TrainingPlot = "dualforce.png"
	// WeightsPlot shows each skill's imitation share sigmoid(mu_i) and the
	// effective sample size of its weights.
	WeightsPlot = "dualforce_weights.png"
	// BehavioursPlot shows, per skill, its weight on each behaviour of the
	// set (BehaviourMassKey): whether its weights choose one route.
	BehavioursPlot = "dualforce_behaviours.png"
)

// WritePlots draws TrainingPlot and WeightsPlot into dir from the metrics
// log at logPath of a run with the given number of skills and bound eps,
// and BehavioursPlot when the set's behaviours are named.
func WritePlots(logPath, dir string, skills int, eps float64, behaviours []string) error {
	var keys []string
	for i := range skills {
		keys = append(keys, skillset.SkillKey(keyConstraint, i), skillset.SkillKey(keySigma, i), skillset.SkillKey(keyESS, i))
	}
	s, err := metrics.ReadSeries(logPath, append(keys, KeyObjective, KeyMeanMinDistance)...)
	if err != nil {
		return err
	}
	x := s.Iteration
	perSkill := func(key string) []metrics.Line {
		lines := make([]metrics.Line, skills)
		for i := range lines {
			lines[i] = metrics.Line{Name: fmt.Sprintf("skill %d", i), X: x, Y: s.Values[skillset.SkillKey(key, i)]}
		}
		return lines
	}
	bound := make([]float64, len(x))
	for i := range bound {
		bound[i] = eps
	}
	if err := metrics.WritePNG(filepath.Join(dir, TrainingPlot), "iteration",
		metrics.Panel{Title: "imitation constraint phi_i = log N + sum w (log w - r_E)", YLabel: "nats",
			Lines: append(perSkill(keyConstraint), metrics.Line{Name: "eps", X: x, Y: bound})},
		metrics.Panel{Title: "VdW objective sum 0.5 l^2 - 0.2 l^5 / l0^3", YLabel: "objective",
			Lines: []metrics.Line{{Name: "VdW", X: x, Y: s.Values[KeyObjective]}}},
		metrics.Panel{Title: "mean minimum successor-feature distance", YLabel: "mean_i l_i",
			Lines: []metrics.Line{{Name: "mean min distance", X: x, Y: s.Values[KeyMeanMinDistance]}}},
	); err != nil {
		return err
	}
	if err := metrics.WritePNG(filepath.Join(dir, WeightsPlot), "iteration",
		metrics.Panel{Title: "imitation share sigmoid(mu_i)", YLabel: "sigmoid(mu)", Lines: perSkill(keySigma)},
		metrics.Panel{Title: "effective sample size (sum w)^2 / sum w^2", YLabel: "transitions", Lines: perSkill(keyESS)},
	); err != nil {
		return err
	}
	if len(behaviours) == 0 {
		return nil
	}
	return writeBehavioursPlot(logPath, filepath.Join(dir, BehavioursPlot), skills, behaviours)
}

// plottedBehaviours is how many behaviours a panel of BehavioursPlot draws:
// as many as the palette tells apart and the legend leaves room for.
const plottedBehaviours = 6

// writeBehavioursPlot draws BehavioursPlot: one panel per skill, one line
// for each of the plottedBehaviours behaviours it weighs most at its peak.
func writeBehavioursPlot(logPath, path string, skills int, behaviours []string) error {
	var keys []string
	for i := range skills {
		for _, b := range behaviours {
			keys = append(keys, BehaviourMassKey(b, i))
		}
	}
	s, err := metrics.ReadSeries(logPath, keys...)
	if err != nil {
		return err
	}
	panels := make([]metrics.Panel, skills)
	for i := range panels {
		lines := mostWeighed(s, i, behaviours)
		panels[i] = metrics.Panel{Title: fmt.Sprintf("skill %d: weight on a behaviour's transitions (the %d it weighs most)", i, len(lines)), YLabel: "weight", Lines: lines}
	}
	return metrics.WritePNG(path, "iteration", panels...)
}

// mostWeighed returns skill i's mass lines of the plottedBehaviours
// behaviours with the highest peak in s, highest first (ties in the order
// of behaviours).
func mostWeighed(s metrics.Series, i int, behaviours []string) []metrics.Line {
	lines := make([]metrics.Line, len(behaviours))
	peak := make(map[string]float64, len(behaviours))
	for k, b := range behaviours {
		y := s.Values[BehaviourMassKey(b, i)]
		lines[k] = metrics.Line{Name: b, X: s.Iteration, Y: y}
		peak[b] = math.Inf(-1)
		for _, v := range y {
			peak[b] = max(peak[b], v)
		}
	}
	slices.SortStableFunc(lines, func(a, b metrics.Line) int { return cmp.Compare(peak[b.Name], peak[a.Name]) })
	return lines[:min(len(lines), plottedBehaviours)]
}
