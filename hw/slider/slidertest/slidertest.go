// Package slidertest provides a real serial link for tests: a socat-made pair of
// pseudo-terminals standing in for the slider box's USB-CDC cable.
package slidertest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PtyPair is a socat-made pair of pseudo-terminals: what is written to Wire arrives at Port.
// Port plays the Arduino's /dev/ttyACM device, Wire the Arduino's side of the USB cable.
type PtyPair struct {
	Port, Wire string
	socat      *exec.Cmd
}

// NewPtyPair starts socat with the pair's links at dir/port (the device side) and
// dir/port.wire (the box's side); the test skips when socat is not installed.
func NewPtyPair(t testing.TB, dir, port string) *PtyPair {
	t.Helper()
	socat, err := exec.LookPath("socat")
	if err != nil {
		t.Skip("socat is not installed; the serial tests need it for a pseudo-terminal pair")
	}
	p := &PtyPair{Port: filepath.Join(dir, port), Wire: filepath.Join(dir, port+".wire")}
	p.socat = exec.Command(socat, "-d", "-d",
		"pty,raw,echo=0,link="+p.Port, "pty,raw,echo=0,link="+p.Wire)
	stderr, err := p.socat.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.socat.Start(); err != nil {
		t.Fatalf("start socat: %v", err)
	}
	t.Cleanup(p.Unplug)
	// The links appear before socat has put both terminals in raw mode; writing earlier would
	// go through a cooked line discipline (ONLCR turns "\n" into "\r\n"). socat says when it is
	// done setting up.
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "starting data transfer loop") {
				close(ready)
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
		close(ready)
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("socat did not start within 5 s")
	}
	for _, link := range []string{p.Port, p.Wire} {
		if _, err := os.Stat(link); err != nil {
			t.Fatalf("socat made no pty link: %v; its log:\n%s", err, log.String())
		}
	}
	return p
}

// Unplug kills socat, which hangs up both terminals like pulling the USB cable.
func (p *PtyPair) Unplug() {
	if p.socat.ProcessState == nil {
		_ = p.socat.Process.Kill()
		_ = p.socat.Wait()
	}
}

// OpenWire opens the Arduino's side of the pair for writing.
func (p *PtyPair) OpenWire(t testing.TB) *os.File {
	t.Helper()
	f, err := os.OpenFile(p.Wire, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p.Wire, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// Send writes lines to f, failing the test after 5 s.
func Send(t testing.TB, f *os.File, lines ...string) {
	t.Helper()
	_ = f.SetWriteDeadline(time.Now().Add(5 * time.Second))
	for _, l := range lines {
		if _, err := f.WriteString(l); err != nil {
			t.Fatalf("write %q: %v", l, err)
		}
	}
}
