//go:build !amd64

package skills

// asmMatmul: no assembly kernel on this architecture (matmulGo runs).
var asmMatmul matmul
