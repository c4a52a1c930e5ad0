//go:build !cgo || purego

package nn

const defaultBackend = PureGo

// openBLASImpl is empty: this build has no OpenBLAS.
var openBLASImpl blasImpl
