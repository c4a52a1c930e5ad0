// Package smodice owns the SMODICE-expert loop (shared/spec/dualforce.md,
// pre-training 1-2) and nothing else: the discriminator's imitation reward
// r_E (trainer/disc) is trained once, before the loop; each iteration then
// takes value steps on the KL dual with R = r_E (trainer/dice, one
// unconditioned value function), computes the whole-set weights and takes
// weighted behaviour-cloning steps drawn by them (trainer/wbc, one
// policy). Data preparation (trainer/prep), the run directory, checkpoints
// and resume (trainer/run, trainer/checkpoint) and the bank export
// (trainer/export) are the machinery every algorithm shares.
//
// The discriminator is trained once, before the loop; a run interrupted
// during that phase starts it again from the beginning (it is
// deterministic), and every checkpoint after it holds the discriminator and
// r_E.
package smodice
