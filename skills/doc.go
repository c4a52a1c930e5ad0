// Package skills owns the one contract between data collection, training,
// evaluation and the on-robot runtime:
//
//   - observation layouts by name and order (Locomotion48, Navigation171), the
//     height-map grid and the target encoding, and the one observation Builder
//     every side calls;
//   - the action mapping from policy output to clamped joint targets;
//   - the Contract that travels inside a bank (normaliser, action scale, default
//     pose, PD gains, rates, feature projection phi, height-map spec);
//   - float32 policy inference (MLP, latent-conditioned Policy) with no
//     allocation on the control path;
//   - the skill-bank file format v1 (an .npz zip with a manifest.json member),
//     its atomic writer and its validating reader;
//   - skill recall by index, tag, name or nearest latent.
//
// The package is pure Go (CGO_ENABLED=0) so the runtime can cross-compile to
// linux/arm64; it imports only the standard library, gonum, npyio and vek.
package skills
