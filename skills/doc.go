// Package skills owns the one contract between data collection, training,
// evaluation and the on-robot runtime:
//
//   - observation layouts by name and order (Locomotion48, Navigation171), the
//     height-map grid and the target encoding, and the one observation Builder
//     every side calls;
//   - the action mapping from policy output to clamped joint targets;
//   - the Contract that travels inside a bank (normaliser, action scale, default
//     pose, PD gains, rates, feature projection phi, height-map spec);
//   - float32 policy inference (MLP, latent-conditioned Policy with a
//     single-Gaussian or Gaussian-mixture head) with no allocation on the
//     control path;
//   - FRE inference: the frozen functional reward encoder (Encoder) and the
//     one encode API (EncodeReward over a SubsetPlan, paper Algorithm 1) that
//     the trainer runs on its offline data and the robot on a bank's anchor
//     states, to encode a new reward zero-shot;
//   - the skill-bank file format v2 (an .npz zip with a manifest.json member;
//     per-latent numbers, the FRE encoder and its anchors as arrays), its
//     atomic writer that enforces the reader's limits, and its validating
//     reader, which also reads format v1; Merge, the skills of several banks
//     of one data set in one bank;
//   - skill recall by index, tag, name or nearest latent, and the names of
//     observation elements an operator's reward weighs ("joint_pos.FL_KFE").
//
// The package builds without cgo (CGO_ENABLED=0) so the runtime can
// cross-compile to linux/arm64; its one assembly kernel, the encoder's matrix
// product in 4x16 register tiles, runs on amd64 CPUs with AVX2 and FMA, and a
// Go loop everywhere else. It imports only the standard library, gonum,
// npyio, vek and x/sys/cpu.
package skills
