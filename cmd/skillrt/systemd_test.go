//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unitFile is the systemd unit skillrt ships for the robot's computer.
const unitFile = "skillrt.service"

// TestSystemdUnit checks the shipped unit with systemd-analyze verify in a scratch root (this
// machine's own units, the unit, and an executable where ExecStart points), and that it runs
// skillrt without root: ambient CAP_NET_RAW and CAP_SYS_NICE and no others, restart on failure.
// verify prints a warning and still exits 0 for an unknown key, so any output fails the test;
// a misspelled key shows that the check catches one.
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("systemd-analyze not installed (Debian package systemd; make setup installs it): %v", err)
	}
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(text []byte) string {
		root := scratchRoot(t, text)
		out, err := exec.Command(analyze, "verify", "--root="+root, "/etc/systemd/system/"+unitFile).CombinedOutput()
		if err != nil {
			return strings.TrimSpace(string(out)) + " (" + err.Error() + ")"
		}
		return strings.TrimSpace(string(out))
	}
	if out := verify(unit); out != "" {
		t.Fatalf("systemd-analyze verify %s:\n%s", unitFile, out)
	}
	if out := verify(bytes.Replace(unit, []byte("AmbientCapabilities="), []byte("AmbientCapabilites="), 1)); !strings.Contains(out, "Unknown key") {
		t.Fatalf("a misspelled key passed verify (output %q)", out)
	}

	for _, want := range []struct{ key, re string }{
		{"ExecStart", `^/usr/local/bin/skillrt run --config \S+`},
		{"DynamicUser", `^yes$`},
		{"AmbientCapabilities", `^CAP_NET_RAW CAP_SYS_NICE$`},
		{"CapabilityBoundingSet", `^CAP_NET_RAW CAP_SYS_NICE$`},
		{"NoNewPrivileges", `^yes$`},
		{"Restart", `^on-failure$`},
	} {
		got := unitValues(unit, want.key)
		if len(got) != 1 || !regexp.MustCompile(want.re).MatchString(got[0]) {
			t.Errorf("%s=%q, want one value matching %s", want.key, got, want.re)
		}
	}
	if u := unitValues(unit, "User"); len(u) != 0 {
		t.Errorf("User=%q: the unit must not name a user (DynamicUser makes an unprivileged one)", u)
	}
	// The exposure score, for the record (systemd's own 0 safe .. 10 exposed).
	out, err := exec.Command(analyze, "security", "--offline=true", "--root="+scratchRoot(t, unit), "/etc/systemd/system/"+unitFile).CombinedOutput()
	if m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+ \S+)`).FindSubmatch(out); err == nil && m != nil {
		t.Logf("systemd-analyze verify: clean; security exposure %s", m[1])
	}
}

// scratchRoot is a directory tree systemd-analyze --root can load the unit in: a copy of this
// machine's system units (their targets), the unit, and a stand-in for the binary.
func scratchRoot(t *testing.T, unit []byte) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copying the system units: %v: %s", err, out)
	}
	for path, content := range map[string]struct {
		data []byte
		mode os.FileMode
	}{
		"etc/systemd/system/" + unitFile: {unit, 0o644},
		"usr/local/bin/skillrt":          {[]byte("#!/bin/sh\nexit 0\n"), 0o755},
	} {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, content.data, content.mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// unitValues returns the values of key in a unit file, in order.
func unitValues(unit []byte, key string) []string {
	var vals []string
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k == key {
			vals = append(vals, v)
		}
	}
	return vals
}
