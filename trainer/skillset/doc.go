// Package skillset owns what the loops that train n skills at once
// (Dual-Force, DOI) share: how a checkpoint saves and restores every
// skill's value and policy learners and generator (SaveLearners), each
// skill's nearest other skill by successor-feature distance and the mean of
// those distances (the diversity curve), the bounded Lagrange multipliers
// on the imitation constraint (sigmoid(mu_i) is skill i's imitation share),
// and the metrics-log keys of per-skill values.
package skillset
