//go:build cgo && !purego

package nn

// #cgo LDFLAGS: -lopenblas
import "C"

import "gonum.org/v1/netlib/blas/netlib"

const defaultBackend = OpenBLAS

var openBLASImpl = blasImpl{f32: netlib.Implementation{}, f64: netlib.Implementation{}}
