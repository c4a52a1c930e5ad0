package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "WAITING_FOR_INIT"},
		{[]string{"--absent-drivers", "64"}, 2, "bad arguments"},
		{[]string{"--alignment", "0s"}, 2, "bad arguments"},
		{[]string{"--log-level", "loud"}, 2, "log-level"},
		{[]string{"--transport", "carrier-pigeon", "--rt-priority", "0"}, 1, "unknown --transport"},
		{[]string{"--transport", "ethernet", "--rt-priority", "0"}, 1, "needs --iface"},
		{[]string{"--listen", "256.0.0.1:1", "--rt-priority", "0"}, 1, "cannot open the link"},
	} {
		var errs bytes.Buffer
		if code := run(tc.args, &errs); code != tc.code || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.want)
		}
	}
}
