// Package disc owns the state discriminator c(s) = sigmoid(f(s)) that tells
// expert states (label 1) from offline states (label 0), trained with binary
// cross-entropy plus the WGAN-GP gradient penalty, and the imitation reward
// r_E(s) = log(c/(1-c)) = f(s) it yields, clipped.
//
// The penalty is a function of the input gradient of f, so its parameter
// gradient is a gradient of a gradient. No Go autodiff library takes those;
// penalty.go derives it by hand for any stack of tanh layers under a linear
// scalar output, and the tests check it against finite differences.
package disc
