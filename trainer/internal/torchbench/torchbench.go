// Package torchbench owns the side-by-side comparison of the trainer's
// benchmarks with their PyTorch twins (scripts in trainer/testdata, run on
// CPU by Debian's python3-torch): it runs a twin right after the Go
// measurement, so that both see about the same machine load, and reports
// both timings and their ratio on the benchmark.
package torchbench

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/dualforce/dualforce/trainer/nn"
)

// Times is what a twin script prints: one JSON line.
type Times struct {
	MeanMs float64 `json:"ms_per_update"`
	MinMs  float64 `json:"min_ms"`
}

// ErrNoTorch reports that /usr/bin/python3 cannot import torch (the
// scripts exit with status 3 then).
var ErrNoTorch = errors.New("torch is not importable by /usr/bin/python3 (apt-get install python3-torch)")

// Run runs script with args and returns its timings.
func Run(script string, args ...string) (Times, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", append([]string{script}, args...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return Times{}, ErrNoTorch
	}
	if err != nil {
		return Times{}, err
	}
	var t Times
	err = json.Unmarshal(out, &t)
	return t, err
}

// EachBackend runs bench as a sub-benchmark on every BLAS backend compiled
// in (skipping the others), restoring the backend afterwards.
func EachBackend(b *testing.B, bench func(b *testing.B, backend nn.Backend)) {
	for _, be := range []nn.Backend{nn.OpenBLAS, nn.PureGo} {
		b.Run(be.String(), func(b *testing.B) {
			prev := nn.CurrentBackend()
			if err := nn.SetBackend(be); err != nil {
				b.Skip(err)
			}
			defer func() { _ = nn.SetBackend(prev) }()
			bench(b, be)
		})
	}
}

// Measure times step in b's loop (the caller has warmed it up), reports
// allocations, ms/update (mean) and min-ms/update (fastest step), and
// returns both.
func Measure(b *testing.B, step func()) (meanMs, fastestMs float64) {
	b.Helper()
	fastest := time.Duration(math.MaxInt64)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		step()
		fastest = min(fastest, time.Since(start))
	}
	meanMs = float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
	fastestMs = float64(fastest.Microseconds()) / 1000
	b.ReportMetric(meanMs, "ms/update")
	b.ReportMetric(fastestMs, "min-ms/update")
	return meanMs, fastestMs
}

// Compare runs the twin and reports, next to the Go figures goMean and
// goFastest (milliseconds per update) already measured by b, the twin's
// torch-ms/update and torch-min-ms/update and go/torch, the ratio of the
// fastest updates (below 1: Go is faster; on a machine shared with other
// work the fastest update is the steadier comparison). Without torch it
// logs why and reports nothing.
func Compare(b *testing.B, label string, goMean, goFastest float64, script string, args ...string) {
	b.Helper()
	torch, err := Run(script, args...)
	if err != nil {
		b.Logf("no PyTorch comparison: %v", err)
		return
	}
	b.Logf("GOMAXPROCS=%d; Go (%s) mean %.1f / fastest %.1f ms per update; PyTorch mean %.1f / fastest %.1f",
		runtime.GOMAXPROCS(0), label, goMean, goFastest, torch.MeanMs, torch.MinMs)
	b.ReportMetric(torch.MeanMs, "torch-ms/update")
	b.ReportMetric(torch.MinMs, "torch-min-ms/update")
	b.ReportMetric(goFastest/torch.MinMs, "go/torch")
}
