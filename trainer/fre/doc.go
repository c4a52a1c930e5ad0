// Package fre owns the pre-training of FRE, the functional reward encoder
// (shared/spec/fre.md, shared/spec/dualforce.md pre-training 3): the
// encoder q(z | {(s_k, r_k)}) and decoder p(r | s, z) on trainer/nn's
// blocks, the reward prior over D_O's standardised states (random linear
// functions, random two-layer MLPs, 27 hand-made rewards and rewards of the
// Dual-Force form (1-c) <phi(s), u> + c r_E(s)) with its one reward
// normalisation, training with checkpoints that resume bit-identically,
// metrics and plots, the held-out evaluation (reconstruction per family on
// states never trained on, identification of unseen rewards) and the export
// of the frozen encoder under the bank's naming contract.
//
// Reward normalisation: r_norm = clip(r / scale, -1, 1) with one scalar
// scale, the 99th percentile of |r| over D_O of Dual-Force-form rewards
// (the rewards encoded later); the table families of the prior are drawn at
// that magnitude (each scaled so that its own 99th percentile of |r| is the
// scale). The same rule, with the scale exported as "fre/reward_scale",
// applies in training, in Dual-Force and on the robot.
//
// Encode and decode states: a reward's encode set is Tokens uniform
// training states and its decode set Decode other ones (the reference
// draws 8 of the 32 from one trajectory; we draw all uniformly). Held-out
// states, a fixed fraction of the source, are only used by Evaluate.
package fre
