// Package dataset owns the trainer's in-memory datasets and the checks run on
// them before training: the offline transitions D_O, the expert states D_E,
// and typed errors for non-finite values, inconsistent shapes, out-of-range
// actions and empty sets.
//
// The optional is_expert column of a recorded dataset is deliberately not a
// field of Offline: the algorithm must never read it. Whoever loads it keeps
// it apart and hands it only to diagnostics (dice.ExpertMass).
package dataset
