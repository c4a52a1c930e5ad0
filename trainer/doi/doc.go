// Package doi owns the DOI baseline (Vlastelica et al. 2024; shared/spec/dualforce.md, "DOI
// baseline"): n skills with one-hot codes z, a skill discriminator q(z | phi(s)) (a softmax
// classifier fitted to samples drawn by each skill's weights, p(z) uniform), the reward
//
//	R_z(s) = (1 - sigmoid(mu_z)) log(|Z| q(z|s)) / |Z| + sigmoid(mu_z) r_E(s),
//
// and per skill the same machinery as SMODICE-expert and Dual-Force: the KL-dual value learner
// (trainer/dice) with its whole-set weights, Polyak-averaged (dice.Polyak), weighted behaviour
// cloning (trainer/wbc), a constraint per skill, and a bounded multiplier per skill stepped by gradient descent on sum_z sigmoid(mu_z)(eps - phi_z). With
// DISDAIN on, q is the mean of an ensemble of classifiers and the disagreement bonus
// H(mean q) - mean H(q) (an information gain) is added to the diversity term with its weight.
//
// What DOI imitates (Imitation): either a SMODICE-expert run on the same data, as the DOI
// authors pre-process (its r_E, and its occupancy ratios eta_E, so that a skill's constraint is
// the spec's KL(d_z || d_E) = sum w_z log(w_z / eta_E)), or an r_E trained here by the
// discriminator, with Dual-Force's constraint phi_z = dice.Constraint(w_z, r_E).
//
// Skills are independent (no shared weights) and step side by side on goroutines; the
// classifier and the multipliers step after them. The run harness (trainer/run) writes
// metrics.jsonl (per skill: value and policy loss, phi, sigmoid(mu), ESS, expert mass; the
// classifier's loss and its mean entropy over the offline states, the collapse check; the
// DISDAIN bonus; the mean minimum distance between the skills' offline successor features) and
// checkpoints the whole state (every skill's learners, generator and Polyak weights, shared
// with Dual-Force through skillset.SaveLearners; the multipliers; the classifiers with their
// optimisers and generator; the imitation target), so that a resumed run ends bit for bit
// where an uninterrupted one ends.
// The bank holds n slots, one latent per skill, named doi-skill<z>.
package doi
