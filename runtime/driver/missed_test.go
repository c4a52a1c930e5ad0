package driver

import (
	"testing"
	"time"
)

// The missed-period rule: a packet more than period+slack after the previous one skipped
// (gap-slack)/period periods.
func TestMissed(t *testing.T) {
	const period, slack = time.Millisecond, 500 * time.Microsecond
	for _, tc := range []struct {
		gap  time.Duration
		want uint64
	}{
		{0, 0},
		{time.Millisecond, 0},
		{1500 * time.Microsecond, 0},
		{1501 * time.Microsecond, 1},
		{2499 * time.Microsecond, 1},
		{2500 * time.Microsecond, 2},
		{20 * time.Millisecond, 19},
	} {
		if got := missed(tc.gap, period, slack); got != tc.want {
			t.Errorf("gap %v: %d missed, want %d", tc.gap, got, tc.want)
		}
	}
}
