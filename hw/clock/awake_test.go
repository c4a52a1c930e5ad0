//go:build linux

package clock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// idleThreadCPUs lists, for each thread of this process at the SCHED_IDLE policy (/proc stat
// field 41; the fields after the command name start at field 3), the CPUs it may run on.
func idleThreadCPUs(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		stat, err1 := os.ReadFile(filepath.Join(task, "stat"))
		status, err2 := os.ReadFile(filepath.Join(task, "status"))
		if err1 != nil || err2 != nil {
			continue // the thread has exited
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) <= 38 || f[38] != "5" {
			continue
		}
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	slices.Sort(out)
	return out
}

// noSpinnerLeft checks that every thread KeepAwake used is back at its old policy: the Go
// scheduler reuses threads, and one left at SCHED_IDLE would starve whatever runs on it next.
func noSpinnerLeft(t *testing.T) {
	t.Helper()
	if left := idleThreadCPUs(t); len(left) != 0 {
		t.Errorf("threads on CPUs %v still at SCHED_IDLE after KeepAwake returned", left)
	}
}

// keepAwakeFor runs KeepAwake on cpus, waits until a thread spins at SCHED_IDLE for each CPU it
// keeps (every CPU when cpus is empty), calls during, and checks that it stops cleanly when its
// context ends.
func keepAwakeFor(t *testing.T, cpus []int, during func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- KeepAwake(ctx, cpus) }()
	want := len(cpus)
	if want == 0 {
		want = runtime.NumCPU()
	}
	for deadline := time.Now().Add(5 * time.Second); len(idleThreadCPUs(t)) < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s, SCHED_IDLE threads on CPUs %v, want %d", idleThreadCPUs(t), want)
		}
	}
	during()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	noSpinnerLeft(t)
}

// While KeepAwake runs, the CPU it keeps has one SCHED_IDLE thread pinned to it and never idles
// (the kernel counts no idle time for it: on a busy machine that holds anyway, the thread check
// does not); no CPUs named means every CPU; it stops when its context ends; a CPU that does not
// exist is an error that stops the others; and every thread it used is given back.
func TestKeepAwake(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	keepAwakeFor(t, []int{cpu}, func() {
		if got := idleThreadCPUs(t); !slices.Equal(got, []string{strconv.Itoa(cpu)}) {
			t.Errorf("SCHED_IDLE threads on CPUs %v, want one on CPU %d", got, cpu)
		}
		before := idleTicks(t, cpu)
		time.Sleep(time.Second)
		idle := idleTicks(t, cpu) - before
		t.Logf("CPU %d idled %d ticks of 100 in the second it was kept awake", cpu, idle)
		if idle > 5 {
			t.Errorf("CPU %d idled %d of 100 ticks while kept awake", cpu, idle)
		}
	})
	keepAwakeFor(t, nil, func() {
		var want []string
		for c := range runtime.NumCPU() {
			want = append(want, strconv.Itoa(c))
		}
		slices.Sort(want)
		if got := idleThreadCPUs(t); !slices.Equal(got, want) {
			t.Errorf("KeepAwake(nil): SCHED_IDLE threads on CPUs %v, want one on each of %v", got, want)
		}
	})

	errc := make(chan error, 1)
	go func() { errc <- KeepAwake(t.Context(), []int{cpu, 1 << 20}) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("KeepAwake on a CPU that does not exist returned no error")
		}
		noSpinnerLeft(t)
	case <-time.After(5 * time.Second):
		t.Fatal("KeepAwake on a CPU that does not exist went on spinning")
	}
}
