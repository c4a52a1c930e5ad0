#include "textflag.h"

// func tile4x16(dst, x, w *float32, n, ldx, ldw, ldd, cols int)
//
// For the four rows of x at x, x+ldx, x+2ldx, x+3ldx (n values each) and every
// block of 16 columns below cols of w (rows ldw apart), sets the 4x16 tile of
// dst (rows ldd apart) to their product. Eight accumulators hold the tile over
// the whole k loop; each k step loads 16 values of w once for four rows (the
// axpy form of a row at a time loads and stores dst every step). n >= 1 and
// cols a multiple of 16; strides in elements.
TEXT ·tile4x16(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ ldx+32(FP), R8
	MOVQ ldw+40(FP), R9
	MOVQ ldd+48(FP), R10
	MOVQ cols+56(FP), R11
	SHLQ $2, CX
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (SI)(R8*1), R13
	LEAQ (SI)(R8*2), R14
	LEAQ (R13)(R8*2), R15
	XORQ R12, R12

cols:
	CMPQ R12, R11
	JGE  done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ (DX)(R12*1), AX
	XORQ BX, BX

k:
	VMOVUPS      (AX), Y8
	VMOVUPS      32(AX), Y9
	VBROADCASTSS (SI)(BX*1), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R13)(BX*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R14)(BX*1), Y10
	VFMADD231PS  Y8, Y10, Y4
	VFMADD231PS  Y9, Y10, Y5
	VBROADCASTSS (R15)(BX*1), Y11
	VFMADD231PS  Y8, Y11, Y6
	VFMADD231PS  Y9, Y11, Y7
	ADDQ         R9, AX
	ADDQ         $4, BX
	CMPQ         BX, CX
	JLT          k

	LEAQ    (DI)(R12*1), AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	ADDQ    R10, AX
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, 32(AX)
	ADDQ    R10, AX
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	ADDQ    R10, AX
	VMOVUPS Y6, (AX)
	VMOVUPS Y7, 32(AX)
	ADDQ    $64, R12
	JMP     cols

done:
	VZEROUPPER
	RET
