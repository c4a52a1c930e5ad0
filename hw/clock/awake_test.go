//go:build linux

package clock

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// idleTicks is the idle time (USER_HZ ticks) /proc/stat reports for cpu.
func idleTicks(t *testing.T, cpu int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 4 && f[0] == fmt.Sprintf("cpu%d", cpu) {
			v, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no cpu%d in /proc/stat", cpu)
	return 0
}

// While KeepAwake runs, the CPU it keeps never idles (the kernel counts no idle time for it);
// it stops when its context ends; a CPU that does not exist is an error that stops the others.
func TestKeepAwake(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- KeepAwake(ctx, []int{cpu}) }()
	time.Sleep(100 * time.Millisecond) // the thread takes its CPU
	before := idleTicks(t, cpu)
	time.Sleep(time.Second)
	idle := idleTicks(t, cpu) - before
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU %d idled %d ticks of 100 in the second it was kept awake", cpu, idle)
	if idle > 5 {
		t.Errorf("CPU %d idled %d of 100 ticks while kept awake", cpu, idle)
	}

	for _, bad := range [][]int{nil, {cpu, 1 << 20}} {
		errc := make(chan error, 1)
		go func() { errc <- KeepAwake(t.Context(), bad) }()
		select {
		case err := <-errc:
			if err == nil {
				t.Errorf("KeepAwake(%v) returned no error", bad)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("KeepAwake(%v) went on spinning", bad)
		}
	}
}
