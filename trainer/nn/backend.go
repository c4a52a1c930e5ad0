package nn

import (
	"errors"
	"fmt"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Float is the element type of networks: float32 for training, float64 for
// gradient checks.
type Float interface {
	~float32 | ~float64
}

// Backend names a BLAS implementation.
type Backend int

// The BLAS backends. OpenBLAS is only available in cgo builds without the
// purego tag.
const (
	PureGo Backend = iota
	OpenBLAS
)

func (b Backend) String() string {
	switch b {
	case PureGo:
		return "purego"
	case OpenBLAS:
		return "openblas"
	default:
		return fmt.Sprintf("Backend(%d)", int(b))
	}
}

// ErrBackendUnavailable is returned by SetBackend for a backend this binary
// was built without.
var ErrBackendUnavailable = errors.New("nn: BLAS backend not compiled into this binary")

type blasImpl struct {
	f32 blas.Float32
	f64 blas.Float64
}

var (
	pureGoImpl = blasImpl{f32: gonum.Implementation{}, f64: gonum.Implementation{}}
	current    = defaultBackend
	active     = implFor(defaultBackend)
)

func implFor(b Backend) blasImpl {
	if b == OpenBLAS {
		return openBLASImpl
	}
	return pureGoImpl
}

// Available reports whether backend b is compiled in.
func Available(b Backend) bool {
	switch b {
	case PureGo:
		return true
	case OpenBLAS:
		return openBLASImpl.f32 != nil
	default:
		return false
	}
}

// SetBackend selects the BLAS used by every network of the process. It is not
// safe to call while another goroutine runs a network.
func SetBackend(b Backend) error {
	if !Available(b) {
		return fmt.Errorf("%w: %v", ErrBackendUnavailable, b)
	}
	current, active = b, implFor(b)
	return nil
}

// CurrentBackend returns the backend in use.
func CurrentBackend() Backend { return current }

// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices stored
// without padding: op(A) is m x k, op(B) is k x n and C is m x n. transA means
// A is stored k x m, transB means B is stored n x k.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a, b []T, beta T, c []T) {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	GemmLD(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, n)
}

// GemmLD is Gemm for matrices inside wider row-major arrays: row i of the
// stored A starts at a[i*lda], and likewise for B and C. It multiplies
// column blocks in place, such as one attention head's columns of a batch.
func GemmLD[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// BLAS rejects a zero leading dimension; the product is empty anyway.
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	if unsafe.Sizeof(alpha) == 4 {
		active.f32.Sgemm(tA, tB, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
		return
	}
	active.f64.Dgemm(tA, tB, m, n, k, float64(alpha), as64(a), lda, as64(b), ldb, float64(beta), as64(c), ldc)
}

// as32 and as64 view a []T as the concrete slice type of the same width; the
// caller has checked the width. Generic code cannot convert slice types, and a
// type switch through an interface would allocate on every matrix product.
func as32[T Float](s []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func as64[T Float](s []T) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
