// Package datafile owns the on-disk format of the Dual-Force datasets: an offline set D_O and a
// separate expert state-only set D_E, each one .npz archive (a zip of .npy members, readable by
// numpy.load) with a manifest.json member.
//
// The offline archive holds, for N transitions: observations and next_observations (N x D
// float32), actions (N x 12 float32 in [-1,1]), terminals, timeouts and episode_starts (bool),
// and the withheld columns the algorithm must never train on: rewards (the task reward),
// is_expert (bool), modes (int32 behaviour label, an index into the manifest's modes),
// base_position and base_rpy (N x 3 float32 ground truth at the first state). The expert
// archive holds observations (M x D float32) only. The manifest records the format version,
// the contract the data was collected under (observation layout by name, action scale, PD
// gains, default pose, rates), counts, the seeds and the generator's parameters.
//
// Writes are atomic (temp file in the target directory, fsync, rename). The archive layer is
// skills/npz (shared with skill banks and training checkpoints): it checks the zip structure and
// checksums, exact member sizes and the .npy header (dtype, order, shape) against what this
// package asks for; this package checks the manifest against the contract and the dataset
// invariants (trainer/dataset). A truncated or corrupt file is an error wrapping ErrFormat, never
// a panic and never silently zero-filled data.
package datafile
