package driver

import (
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
)

// benchCoreStep times core.Step alone on a live sensor packet, in the phase reached by setup.
func benchCoreStep(b *testing.B, autoRun bool, want core.Phase) {
	r := newRig(b, constantBank(b, [12]float32{0.1}), func(cfg *core.Config) { cfg.AutoRun = autoRun })
	for r.core.Phase() != want {
		if err := r.ls.Step(); err != nil {
			b.Fatal(err)
		}
	}
	in := r.ls.in
	var out core.Output
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		in.Now += time.Millisecond
		r.core.Step(&in, &out)
	}
	if r.core.Fault() != "" {
		b.Fatalf("fault %q during the benchmark", r.core.Fault())
	}
}

// BenchmarkCoreTickHold is the core's 1 kHz tick without the policy: estimator, supervisor,
// PD command for the held pose, joint map.
func BenchmarkCoreTickHold(b *testing.B) { benchCoreStep(b, false, core.PhaseHold) }

// BenchmarkCoreTickRun averages over policy ticks (one in 20, with a 48->24 policy) too.
func BenchmarkCoreTickRun(b *testing.B) { benchCoreStep(b, true, core.PhaseRun) }

// BenchmarkLockstepTick is one whole lockstep millisecond: board firmware and first-order plant,
// sensor encode/decode, core, command encode/decode.
func BenchmarkLockstepTick(b *testing.B) {
	r := newRig(b, constantBank(b, [12]float32{0.1}), func(cfg *core.Config) { cfg.AutoRun = true })
	r.ls.Observe = nil
	b.ReportAllocs()
	for b.Loop() {
		if err := r.ls.Step(); err != nil {
			b.Fatal(err)
		}
	}
}
