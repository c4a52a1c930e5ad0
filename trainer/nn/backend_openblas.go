//go:build cgo && !purego

package nn

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

import (
	"os"

	"gonum.org/v1/netlib/blas/netlib"
)

const defaultBackend = OpenBLAS

var openBLASImpl = blasImpl{f32: netlib.Implementation{}, f64: netlib.Implementation{}}

// OneBLASThreadUnlessSet makes OpenBLAS use one thread per call unless the
// environment sets OPENBLAS_NUM_THREADS, and says whether it did: a trainer
// that runs several learners side by side on goroutines calls it, because
// OpenBLAS's own threads then fight the Go scheduler for the cores.
func OneBLASThreadUnlessSet() bool {
	if _, set := os.LookupEnv("OPENBLAS_NUM_THREADS"); set {
		return false
	}
	C.openblas_set_num_threads(1)
	return true
}
