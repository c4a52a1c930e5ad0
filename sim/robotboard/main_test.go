package robotboard_test

import (
	"os"
	"testing"

	"github.com/dualforce/dualforce/sim/robotboard"
)

// TestMain gives the real-time tests the Ps a real-time server needs, as cmd/solo12sim does.
func TestMain(m *testing.M) {
	robotboard.ReserveProcs()
	os.Exit(m.Run())
}
