// Package prep owns data preparation for every training algorithm
// (SMODICE-expert, Dual-Force, DOI, behaviour cloning): the task registry
// (each task's observation layout, diversity features phi and defaults),
// the checks that run before any training (shapes, finite values, action
// range, initial states, the contract against the data and the task, the
// expert set against the offline set), the standardisation of observations
// with the offline set's statistics (which travel into the bank's
// contract), phi (the task's fields or others a run chooses) standardised
// per dimension, the data digest a run is resumed against, and the withheld
// behaviour labels kept for diagnostics.
package prep
