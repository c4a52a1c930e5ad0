// Package boardtest builds the emulated master board that tests of the link, the host session
// and the runtime talk to, so each of them does not assemble its own.
package boardtest

import (
	"testing"

	"github.com/dualforce/dualforce/hw/board"
)

// FirstOrder is an emulated master board under cfg whose motors are the default first-order
// plant (board.FirstOrderConfig{}: every joint at rest at 0), failing t on error.
func FirstOrder(t testing.TB, cfg board.Config) *board.Board {
	t.Helper()
	plant, err := board.NewFirstOrderPlant(board.FirstOrderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := board.New(cfg, plant)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
