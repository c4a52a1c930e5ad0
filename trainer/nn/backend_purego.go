//go:build !cgo || purego

package nn

const defaultBackend = PureGo

// openBLASImpl is empty: this build has no OpenBLAS.
var openBLASImpl blasImpl

// OneBLASThreadUnlessSet does nothing: this build has no OpenBLAS.
func OneBLASThreadUnlessSet() bool { return false }
