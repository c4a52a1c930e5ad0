// Package cref is a C reference implementation of dense-MLP inference, used
// only by the skills benchmarks to compare the pure-Go inference against
// what gcc -O3 -march=native -ffast-math makes of the same network. It is
// empty without cgo, so skills itself stays pure Go.
package cref
