package app

import (
	"testing"

	"github.com/dualforce/dualforce/runtime/config"
)

// The harness, for the external tests of this directory (replay imports app).
var (
	StartHarness = startHarness
	TestConfig   = testConfig
)

// Runtime returns the harness's runtime.
func (h *harness) Runtime() *Runtime { return h.rt }

// Stop ends the harness's run.
func (h *harness) Stop(t testing.TB) { h.stop(t) }

// Config is the configuration the harness runs.
func (h *harness) Config() config.Config { return h.cfg }
