//go:build linux

package clocktest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// idleThreads counts the threads of process pid at the SCHED_IDLE policy (/proc's stat field
// 41; the fields after the command name start at field 3).
func idleThreads(pid string) int {
	stats, _ := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "stat"))
	n := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); len(f) > 38 && f[38] == "5" {
			n++
		}
	}
	return n
}

// KeepAwake starts a child process with one SCHED_IDLE spinning thread per CPU, and it is gone
// when the test ends.
func TestKeepAwakeStartsTheSpinner(t *testing.T) {
	t.Setenv(Off, "")
	var child string
	t.Run("running", func(t *testing.T) {
		KeepAwake(t)
		deadline := time.Now().Add(5 * time.Second)
		for {
			kids, _ := filepath.Glob("/proc/self/task/*/children")
			for _, k := range kids {
				b, _ := os.ReadFile(k)
				for _, pid := range strings.Fields(string(b)) {
					if idleThreads(pid) == runtime.NumCPU() {
						child = pid
					}
				}
			}
			if child != "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no child process with %d SCHED_IDLE threads within 5 s", runtime.NumCPU())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if _, err := os.Stat(filepath.Join("/proc", child)); err == nil {
		t.Fatalf("the spinner, process %s, outlived its test", child)
	}
}

// TestAttempts: runs that met a stall are skipped and made again; the first that did not ends
// it (the test would fail had all three stalled).
func TestAttempts(t *testing.T) {
	runs := 0
	Attempts(t, 3, func(t *testing.T, stalled func(string, ...any)) {
		runs++
		if runs < 3 {
			stalled("run %d stalls", runs)
		}
	})
	if runs != 3 {
		t.Fatalf("%d runs, want 3: two stalled, the third judged", runs)
	}
}
