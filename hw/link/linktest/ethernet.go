//go:build linux

package linktest

import (
	"testing"

	"github.com/dualforce/dualforce/hw/link"
)

// OpenEthernet opens a raw socket (link.OpenEthernet) on the namespace's veth end. It is closed
// when the test ends, before the namespaces are deleted (cleanups run last-in first-out).
func (n *Namespace) OpenEthernet(tb testing.TB) *link.Ethernet {
	tb.Helper()
	var e *link.Ethernet
	if err := n.Do(func() (err error) { e, err = link.OpenEthernet(n.Interface()); return err }); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}
