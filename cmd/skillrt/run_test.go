package main

import (
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/config"
)

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{"3", []int{3}, false},
		{"0, 2,3", []int{0, 2, 3}, false},
		{"", nil, true},
		{"1,x", nil, true},
		{"-1", nil, true},
	} {
		var l cpuList
		err := l.Set(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !slices.Equal(l, tc.want)) {
			t.Errorf("Set(%q) = %v, %v", tc.in, l, err)
		}
		if !tc.bad && l.String() == "" {
			t.Errorf("Set(%q): String empty", tc.in)
		}
	}
}

// TestMakeRunConfig loads the config `make run` starts the runtime with: a key the parser does
// not know, or a value out of range, would otherwise show first when someone runs the quick
// start. The simulator's scheduling stalls on a shared machine need the longest link timeout.
func TestMakeRunConfig(t *testing.T) {
	c, err := config.Load("sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport.Kind != "udp" || c.Transport.Addr != "127.0.0.1:9750" {
		t.Errorf("transport %+v, want udp to 127.0.0.1:9750, where make run serves the simulator", c.Transport)
	}
	if c.Limits.LinkTimeout != 50*time.Millisecond {
		t.Errorf("link timeout %v, want 50ms (see the comment in sim.yaml)", c.Limits.LinkTimeout)
	}
}
