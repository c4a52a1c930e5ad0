package eval

import (
	"math"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/trainer/collect"
)

func TestDescriptorMean(t *testing.T) {
	var d descriptorMean
	if got := d.mean(); got != (Descriptors{}) {
		t.Fatalf("no states: %+v", got)
	}
	// A trot at 0.3 m/s drifting left and turning right, bobbing between 0.18 and 0.20 m.
	for k := range 4 {
		s := behave.State{LinVel: [3]float64{0.3, 0.02 * float64(k), 0.5}, AngVel: [3]float64{1, 1, -0.1}}
		d.add(&s, 0.18+0.02*float64(k%2))
	}
	got, want := d.mean(), Descriptors{Height: 0.19, ForwardVel: 0.3, LateralVel: 0.03, YawRate: -0.1}
	for _, c := range [][2]float64{{got.Height, want.Height}, {got.ForwardVel, want.ForwardVel}, {got.LateralVel, want.LateralVel}, {got.YawRate, want.YawRate}} {
		if math.Abs(c[0]-c[1]) > 1e-12 {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

func TestHeightClass(t *testing.T) {
	for _, tc := range []struct {
		h    float64
		want string
	}{
		{0.0, TagLow}, {0.19, TagLow}, {0.2149, TagLow}, {0.216, TagMiddle}, {0.24, TagMiddle},
		{0.2599, TagMiddle}, {0.261, TagHigh}, {0.28, TagHigh}, {0.4, TagHigh},
	} {
		if got := HeightClass(tc.h); got != tc.want {
			t.Errorf("HeightClass(%v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func TestMeasuredTags(t *testing.T) {
	high := &Summary{Descriptors: Descriptors{Height: 0.28}, Rollouts: make([]Rollout, 3)}
	if got := MeasuredTags(collect.TaskLocomotion, high); !slices.Equal(got, []string{TagHigh}) {
		t.Errorf("locomotion: %q", got)
	}
	if got := MeasuredTags(collect.TaskLocomotion, &Summary{}); got != nil {
		t.Errorf("no rollouts: %q", got)
	}
	for _, tag := range []string{TagLow, TagMiddle, TagHigh, TagLeft, TagRight, TagOver} {
		if !measuredTag(tag) {
			t.Errorf("%q is not a measured tag", tag)
		}
	}
	if measuredTag("bc") {
		t.Error(`"bc" is a measured tag`)
	}
}
