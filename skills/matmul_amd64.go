package skills

import "golang.org/x/sys/cpu"

// tile4x16 is in matmul_amd64.s.
//
//go:noescape
func tile4x16(dst, x, w *float32, n, ldx, ldw, ldd, cols int)

// asmMatmul is matmulAVX2 where the CPU has AVX2 and FMA.
var asmMatmul = func() matmul {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return matmulAVX2
	}
	return nil
}()

// matmulAVX2 computes tiles of 4 rows by 16 columns in registers (the
// assembly's tile4x16), and any columns past the last multiple of 16 in Go.
// A last row on its own goes through the tile with both row strides 0: the
// four tile rows compute the same row and store it in the same place.
func matmulAVX2(dst, x, w []float32, n, p int) {
	m := len(x) / n
	if m == 0 || p == 0 {
		return
	}
	// The assembly checks no bounds: check them once here.
	_, _ = dst[m*p-1], w[n*p-1]
	cols := p &^ 15
	if cols > 0 {
		i := 0
		for ; i+4 <= m; i += 4 {
			tile4x16(&dst[i*p], &x[i*n], &w[0], n, n, p, p, cols)
		}
		for ; i < m; i++ {
			tile4x16(&dst[i*p], &x[i*n], &w[0], n, 0, p, 0, cols)
		}
	}
	for r := range m {
		xr := x[r*n : (r+1)*n]
		for j := cols; j < p; j++ {
			var s float32
			for k, a := range xr {
				s += a * w[k*p+j]
			}
			dst[r*p+j] = s
		}
	}
}
