// Package dualforce owns the Dual-Force loop (shared/spec/dualforce.md, the
// paper's Algorithm 1): n skills, each with its own value function, policy
// and weights w_i over the whole offline set, pushed apart by the Van der
// Waals (VdW) diversity reward on their successor features and held to the
// expert by bounded Lagrange multipliers on the imitation constraint. Every
// latent z_i^k a skill is trained under is stored with its skill, iteration,
// sigmoid(mu_i), constraint estimate phi_i and offline successor features.
// Since the bank offers every one of them to the robot, each skill's policy
// also rehearses (ours, Config.RehearsalSteps): extra steps on a spread of
// its earlier latents with samples of their iterations' weights, so that it
// still acts on the latents it met long ago.
//
// The VdW pieces are pure functions of the successor features (vdw.go; the
// nearest skills and the bounded multipliers, which DOI uses too, are
// trainer/skillset's); the
// loop (loop.go) wires them to a value learner by the KL dual, a weighted-BC
// policy learner and a frozen FRE encoder per skill, each seen through a
// small interface, so that the loop owns only its own logic; Train
// (train.go) runs it on the shared machinery (dice.Value, wbc.Learner, the
// run harness, one checkpoint format) and exports the bank through
// trainer/export. Judge (export.go) lets the harness judge a run's
// checkpoints skill by skill in the simulator, and the bank then takes
// each skill from the checkpoint it was judged best in.
package dualforce
