//go:build linux

package clock

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Pin confines the calling thread to the CPUs asked for, refuses impossible ones, and restore
// gives the thread its previous CPUs back.
func TestPin(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]int{nil, {-1}, {1 << 20}} {
		if _, err := Pin(bad); err == nil {
			t.Errorf("Pin(%v) accepted", bad)
		}
	}
	cpu := runtime.NumCPU() - 1
	restore, err := Pin([]int{cpu})
	if err != nil {
		t.Fatal(err)
	}
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(0, &now); err != nil {
		t.Fatal(err)
	}
	if now.Count() != 1 || !now.IsSet(cpu) {
		t.Fatalf("pinned to CPU %d, affinity has %d CPUs (CPU %d set: %v)", cpu, now.Count(), cpu, now.IsSet(cpu))
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedGetaffinity(0, &now); err != nil {
		t.Fatal(err)
	}
	if now != before {
		t.Fatalf("affinity after restore %v, before %v", now, before)
	}
}
