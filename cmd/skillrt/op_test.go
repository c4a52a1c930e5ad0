package main

import (
	"reflect"
	"testing"
)

func TestParseReward(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[string]float64 // nil: refused
	}{
		{[]string{"joint_pos.FL_KFE=-1", "base_lin_vel.x=0.5"}, map[string]float64{"joint_pos.FL_KFE": -1, "base_lin_vel.x": 0.5}},
		{[]string{"height_map[60]=1e-1"}, map[string]float64{"height_map[60]": 0.1}},
		{[]string{"joint_pos.FL_KFE"}, nil},
		{[]string{"=1"}, nil},
		{[]string{"a=one"}, nil},
		{[]string{"a=1", "a=2"}, nil},
		{[]string{"a=NaN"}, nil},
		{[]string{"a=-Inf"}, nil},
	} {
		got, err := parseReward(tc.args)
		if (err == nil) != (tc.want != nil) || (tc.want != nil && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parseReward(%q) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}
