//go:build linux

package linktest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// netnsDir is where `ip netns add` mounts named namespaces.
	netnsDir = "/run/netns"
	// linkUpTimeout bounds the wait for a new veth pair to come up; the kernel batches link
	// events for up to a second.
	linkUpTimeout = 5 * time.Second
)

// pairCount makes names unique within the process; the pid makes them unique on the host.
var pairCount atomic.Uint32

// Namespace is a named network namespace holding one end of a veth pair.
type Namespace struct {
	name   string
	ifname string
}

// Name is the namespace's name, as `ip netns list` shows it.
func (ns *Namespace) Name() string { return ns.name }

// Interface is the name of the namespace's veth end (up, default MTU).
func (ns *Namespace) Interface() string { return ns.ifname }

// Path is the file that pins the namespace; it exists exactly as long as the namespace is named.
func (ns *Namespace) Path() string { return filepath.Join(netnsDir, ns.name) }

// VethPair creates two fresh network namespaces joined by a veth pair, one end in each, both up.
// t.Cleanup deletes both namespaces whatever the test's outcome; the veth pair goes with the last
// reference to them, so close sockets opened inside before the test ends. It skips the test when
// the process lacks the privileges or the ip tool.
func VethPair(t testing.TB) (a, b *Namespace) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("linktest: needs the ip tool of iproute2 (apt-get install iproute2): ", err)
	}
	if missing := missingCaps(); missing != "" {
		t.Skipf("linktest: creating network namespaces needs %s; run the tests as root", missing)
	}
	id := fmt.Sprintf("%x-%x", os.Getpid(), pairCount.Add(1))
	a = &Namespace{name: "dflink-" + id + "-a", ifname: "dl" + id + "a"}
	b = &Namespace{name: "dflink-" + id + "-b", ifname: "dl" + id + "b"}
	for _, ns := range []*Namespace{a, b} {
		if err := ip("netns", "add", ns.name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := ip("netns", "delete", ns.name); err != nil {
				t.Error(err)
			}
		})
	}
	if err := ip("link", "add", a.ifname, "netns", a.name, "type", "veth",
		"peer", "name", b.ifname, "netns", b.name); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*Namespace{a, b} {
		if err := ip("-n", ns.name, "link", "set", "dev", ns.ifname, "up"); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []*Namespace{a, b} {
		if err := ns.waitUp(); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// waitUp waits until the kernel's link watcher has brought the interface up. Until then its
// queueing discipline is "noop", which silently drops every frame sent: a test writing at once
// would lose its first frames.
func (ns *Namespace) waitUp() error {
	deadline := time.Now().Add(linkUpTimeout)
	for {
		out, err := exec.Command("ip", "-n", ns.name, "-o", "link", "show", "dev", ns.ifname).CombinedOutput()
		if err != nil {
			return fmt.Errorf("linktest: ip -n %s link show %s: %w: %s", ns.name, ns.ifname, err, out)
		}
		if bytes.Contains(out, []byte("state UP")) && !bytes.Contains(out, []byte("qdisc noop")) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("linktest: %s in %s not up after %v: %s", ns.ifname, ns.name, linkUpTimeout, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Do runs fn on a fresh goroutine whose OS thread has entered the namespace, and returns fn's
// error. Sockets fn opens belong to the namespace for their whole life, wherever they are used
// later. The thread is never unlocked, so Go discards it with the goroutine instead of reusing
// it outside the namespace. fn runs on another goroutine: it must not call t.FailNow.
func (ns *Namespace) Do(fn func() error) error {
	f, err := os.Open(ns.Path())
	if err != nil {
		return fmt.Errorf("linktest: open namespace %s: %w", ns.name, err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		err := errors.New("linktest: fn exited without returning")
		defer func() { done <- err }()
		if err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			err = fmt.Errorf("linktest: enter namespace %s: %w", ns.name, err)
			return
		}
		err = fn()
	}()
	return <-done
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("linktest: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// missingCaps names the capabilities namespaces and veth pairs need that the process lacks.
func missingCaps() string {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "CAP_NET_ADMIN and CAP_SYS_ADMIN (capget failed: " + err.Error() + ")"
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"}, {unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}} {
		if data[c.bit/32].Effective&(1<<(c.bit%32)) == 0 {
			missing = append(missing, c.name)
		}
	}
	return strings.Join(missing, " and ")
}
