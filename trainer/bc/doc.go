// Package bc owns plain behaviour cloning of one behaviour of an offline
// dataset: the transitions carrying a chosen behaviour label are cloned
// with uniform weights into the same tanh-squashed Gaussian policy and the
// same bank export as the trained skills (the shared data preparation,
// weighted behaviour cloning with uniform weights, and export): the
// behaviour-cloning baseline of the evaluation. Its bank is tagged "bc" and
// named "<label> fit" so that nobody takes it for a trained skill.
//
// Reading the behaviour labels is what this package is for; the Dual-Force
// algorithm itself never reads them.
package bc
