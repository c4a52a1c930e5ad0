// Package smodice owns the SMODICE-expert pipeline (shared/spec/dualforce.md,
// pre-training 1-2): preparing the datasets (observations standardised with
// the offline set's statistics, which travel into the bank's contract;
// diversity features phi standardised per dimension), checking them before
// any training starts (including that the dataset's observation layout is
// the one of the requested task), training the state discriminator and
// reporting its held-out accuracy, computing the imitation reward r_E over
// the whole offline set, running DICE with R = r_E (one unconditioned value
// function, one policy), the run directory (JSON-lines metrics, PNG plots,
// atomic checkpoints that resume bit-identically) and the export of the
// trained policy as a one-latent skills.Bank.
//
// Latent: a SMODICE policy is not conditioned on a latent, but a bank's
// policy contract requires LatentDim >= 1. Exported banks therefore have
// LatentDim 1 and one latent z = [0], and the first layer of the exported
// network gets a zero weight column for it, so the bank's policy computes
// exactly the trained one.
//
// The discriminator is trained once, before DICE; a run interrupted during
// that phase starts it again from the beginning (it is deterministic), and
// every checkpoint after it holds the discriminator and r_E.
package smodice
