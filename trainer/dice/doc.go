// Package dice owns distribution-correction estimation with the KL dual:
// the value objective
//
//	L(V) = (1-gamma) E_{s0}[V(s0)] + log E_{D_O}[exp(delta)],
//	delta(s,a,s') = R(s,a) + gamma (1-terminal) V(s') - V(s),
//
// the occupancy ratios w = softmax of delta over the WHOLE offline set,
// weighted behaviour cloning of a tanh-squashed Gaussian policy, and the
// per-iteration diagnostics (effective sample size, largest weight, the
// paper's off-policy KL estimate, and, kept apart, the weight mass on
// expert transitions). With R = r_E (the discriminator's reward) this is
// SMODICE. ValueConfig.AbsorbingFalls (ours; off in DefaultValueConfig, on
// in the SMODICE-expert's and Dual-Force's defaults) replaces the
// terminal's 0 by the value of staying at the set's lowest reward, min R /
// (1-gamma), so that with a mostly negative reward a fall is not a way out.
// ValueConfig.RefreshRows (ours; off in DefaultValueConfig, on in
// Dual-Force's defaults for large sets) makes the whole-set pass an
// estimator that re-evaluates V on one block of rows per pass and reuses
// the others' values; Value.StaleError measures its error.
// ValueConfig.MinESSShare (ours; off by default) caps delta at its value at
// a top share of the set before the softmax, which bounds every weight and
// so the effective sample size from below.
//
// The trainer never sees which transitions are expert ones: dataset.Offline
// has no such column and ExpertMass, the only reader of the labels, is a
// free function of the weights.
package dice
