// Package nn owns the trainer's hand-written neural-network arithmetic: dense
// layers and multi-layer perceptrons with batched forward and backward passes,
// the Adam optimiser, numerically stable log-sum-exp reductions and the
// tanh-squashed Gaussian policy head; and the blocks of set transformers and
// residual MLPs (layers.go, attention.go): Linear, LayerNorm, GELU, mish,
// embedding lookup, multi-head self-attention over sets (no mask, no
// positions) and mean-pooling, whose parameters live in an Arena so that one
// Adam, one ZeroGrad and one checkpoint array cover a whole model.
//
// Everything is generic over float32 (training) and float64 (finite-difference
// gradient checks in tests). Matrices are dense and row-major; a batch is a
// rows x width matrix. Matrix products go through gonum's BLAS interfaces
// (blas.Float32 / blas.Float64), with two interchangeable backends:
//
//   - OpenBLAS through cgo (gonum.org/v1/netlib, linked with -lopenblas;
//     needs Debian's libopenblas-dev). This is the default whenever cgo is on.
//   - gonum's pure-Go BLAS. It is the only backend when the package is built
//     with CGO_ENABLED=0 or with the build tag purego
//     (go test -tags purego ./trainer/...).
//
// SetBackend switches between them at run time (benchmarks compare both in one
// run); call it before any network is used, not while one is training.
//
// Derivatives are written by hand. The rule of the house: every one of them
// has a finite-difference check in the tests (through trainer/internal/gradcheck,
// whose own tests show that a wrong gradient is caught). gorgonia v0.9.18 is a test-only
// oracle and benchmark peer: forward passes, gradients and Adam steps agree
// with its symbolic ones to rounding error (gorgonia_test.go), and
// BenchmarkMLPAdamStep measures both on the same BLAS. It is not used to
// train, because it is slower, allocates about 1,000 times and 4.4 MB per
// step, and cannot differentiate a gradient, which the discriminator's
// gradient penalty needs.
package nn
