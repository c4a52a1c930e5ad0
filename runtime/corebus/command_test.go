package corebus

import "testing"

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"stand", ModeStand, true}, {"run", ModeRun, true}, {"damp", ModeDamp, true}, {"stop", ModeStop, true},
		{"unknown", ModeUnknown, false}, {"", ModeUnknown, false}, {"RUN", ModeUnknown, false}, {"walk", ModeUnknown, false},
	} {
		got, ok := ParseMode(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
}
