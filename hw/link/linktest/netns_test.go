//go:build linux

package linktest_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dualforce/dualforce/hw/link/linktest"
)

// helperEnv makes the test binary run TestHelperFailingPair for TestCleanupAfterFailure.
const helperEnv = "LINKTEST_FAILING_HELPER"

func TestVethPair(t *testing.T) {
	var names []string
	t.Run("create", func(t *testing.T) {
		a, b := linktest.VethPair(t)
		names = append(names, a.Name(), b.Name())
		if a.Name() == b.Name() || a.Interface() == b.Interface() {
			t.Fatalf("names not unique: %s/%s, %s/%s", a.Name(), a.Interface(), b.Name(), b.Interface())
		}
		for _, ns := range []*linktest.Namespace{a, b} {
			err := ns.Do(func() error {
				ifc, err := net.InterfaceByName(ns.Interface())
				if err != nil {
					return err
				}
				if ifc.Flags&net.FlagUp == 0 || ifc.MTU != 1500 {
					return fmt.Errorf("%s: flags %v, MTU %d; want up, 1500", ifc.Name, ifc.Flags, ifc.MTU)
				}
				return nil
			})
			if err != nil {
				t.Errorf("namespace %s: %v", ns.Name(), err)
			}
		}
		// The peer's interface lives only in the other namespace.
		if err := a.Do(func() error { _, err := net.InterfaceByName(b.Interface()); return err }); err == nil {
			t.Errorf("%s sees %s, which belongs to %s", a.Name(), b.Interface(), b.Name())
		}
	})
	if len(names) == 0 {
		return // skipped
	}
	assertGone(t, names)
}

// TestCleanupAfterFailure runs a test that fails right after creating a pair, in a child process,
// and checks that its namespaces were deleted anyway.
func TestCleanupAfterFailure(t *testing.T) {
	linktest.VethPair(t) // skips here, not in the child, when privileges are missing
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFailingPair$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper test should fail, got %v:\n%s", err, out)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "namespace: "); ok {
			names = append(names, name)
		}
	}
	if len(names) != 2 {
		t.Fatalf("helper printed %d namespace names, want 2:\n%s", len(names), out)
	}
	assertGone(t, names)
}

func TestHelperFailingPair(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("runs only as TestCleanupAfterFailure's child")
	}
	a, b := linktest.VethPair(t)
	fmt.Printf("namespace: %s\nnamespace: %s\n", a.Name(), b.Name())
	t.Fatal("failing on purpose: cleanup must still delete the namespaces")
}

func TestDoEntersNamespaceOnlyForFn(t *testing.T) {
	a, _ := linktest.VethPair(t)
	var want unix.Stat_t
	if err := unix.Stat(a.Path(), &want); err != nil {
		t.Fatal(err)
	}
	var inside, outside unix.Stat_t
	if err := a.Do(func() error { return unix.Stat("/proc/thread-self/ns/net", &inside) }); err != nil {
		t.Fatal(err)
	}
	if inside.Ino != want.Ino || inside.Dev != want.Dev {
		t.Errorf("fn ran in namespace inode %d, want %d", inside.Ino, want.Ino)
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &outside); err != nil {
		t.Fatal(err)
	}
	if outside.Ino == want.Ino {
		t.Error("the calling thread entered the namespace too")
	}
	sentinel := errors.New("from fn")
	if err := a.Do(func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("Do returned %v, want fn's error", err)
	}
}

func assertGone(t *testing.T, names []string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	for _, name := range names {
		if _, err := os.Stat("/run/netns/" + name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s still pinned (stat: %v)", name, err)
		}
		if bytes.Contains(out, []byte(name)) {
			t.Errorf("namespace %s still listed by ip netns list", name)
		}
	}
}

// TestSkipsWithoutPrivileges reruns TestVethPair in a child that setpriv stripped of every
// capability, and checks that it skips and says why instead of failing.
func TestSkipsWithoutPrivileges(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop capabilities: ", err)
	}
	out, err := exec.Command(setpriv, "--bounding-set=-all", "--inh-caps=-all",
		os.Args[0], "-test.run=^TestVethPair$", "-test.v").CombinedOutput()
	if err != nil {
		t.Fatalf("child without capabilities failed: %v\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestVethPair/create", "needs CAP_NET_ADMIN and CAP_SYS_ADMIN"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}
