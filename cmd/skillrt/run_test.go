package main

import (
	"slices"
	"testing"
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
