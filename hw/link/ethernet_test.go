//go:build linux

package link_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/hw/proto"
)

func TestEthernetInVethPair(t *testing.T) {
	a, b := linktest.VethPair(t)
	host, board := a.OpenEthernet(t), b.OpenEthernet(t)
	// A second program on the host's interface: its frames leave the host, so our socket must
	// not read them back.
	neighbour := a.OpenEthernet(t)
	setTimeout(t, time.Second, host, board, neighbour)
	buf := make([]byte, proto.MaxFrameLen)

	t.Run("local MAC is the interface's", func(t *testing.T) {
		for _, c := range []struct {
			ns *linktest.Namespace
			e  *link.Ethernet
		}{{a, host}, {b, board}} {
			var hw net.HardwareAddr
			err := c.ns.Do(func() error {
				ifc, err := net.InterfaceByName(c.ns.Interface())
				if ifc != nil {
					hw = ifc.HardwareAddr
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if mac := c.e.LocalMAC(); !bytes.Equal(mac[:], hw) {
				t.Errorf("%s: LocalMAC %v, interface has %v", c.e.Interface(), mac, hw)
			}
		}
	})

	t.Run("own and neighbour's outgoing frames not read", func(t *testing.T) {
		mine, theirs := frame(t, host.LocalMAC(), proto.InitLen, 1), frame(t, host.LocalMAC(), proto.CommandLen, 2)
		if err := host.WriteFrame(mine); err != nil {
			t.Fatal(err)
		}
		if err := neighbour.WriteFrame(theirs); err != nil {
			t.Fatal(err)
		}
		for _, want := range [][]byte{mine, theirs} {
			n, err := board.ReadFrame(buf)
			if err != nil || !bytes.Equal(buf[:n], want) {
				t.Fatalf("board read %x, %v; want %x", buf[:n], err, want)
			}
		}
		setTimeout(t, 50*time.Millisecond, host)
		defer setTimeout(t, time.Second, host)
		if n, err := host.ReadFrame(buf); err != link.ErrTimeout {
			t.Fatalf("host read back an outgoing frame: %x, %v", buf[:n], err)
		}
	})

	t.Run("other EtherTypes filtered by the kernel", func(t *testing.T) {
		want := frame(t, board.LocalMAC(), proto.AckLen, 3)
		for _, etherType := range []uint16{0x0800, 0x86DD, 0x88B6, 0xB588} {
			f := bytes.Clone(want)
			binary.BigEndian.PutUint16(f[12:], etherType)
			if err := board.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := board.WriteFrame(want); err != nil {
			t.Fatal(err)
		}
		n, err := host.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("host read %x, %v; want only the 0x88B5 frame %x", buf[:n], err, want)
		}
	})

	// A frame that waits in the socket keeps the time it arrived: the kernel's stamp falls between
	// the write and the read, and the wait shows as the gap to the read.
	t.Run("arrival stamped by the kernel", func(t *testing.T) {
		const wait = 30 * time.Millisecond
		f := frame(t, board.LocalMAC(), proto.SensorLen, 5)
		sent := time.Now()
		if err := board.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		if _, err := host.ReadFrame(buf); err != nil {
			t.Fatal(err)
		}
		read := time.Now()
		at, err := host.LastArrival()
		if err != nil {
			t.Fatal(err)
		}
		// The kernel's clock is read through another path than Go's: allow a little skew.
		if at.Before(sent.Add(-time.Millisecond)) || read.Sub(at) < wait-time.Millisecond {
			t.Fatalf("arrival %v after the write, %v before the read; want about %v in the socket", at.Sub(sent), read.Sub(at), wait)
		}
		t.Logf("frame stamped %v after the write, read %v after arriving", at.Sub(sent), read.Sub(at))
	})

	t.Run("frames leave as written, broadcast destination kept", func(t *testing.T) {
		f := frame(t, host.LocalMAC(), proto.CommandLen, 4)
		if err := host.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		n, err := board.ReadFrame(buf)
		if err != nil {
			t.Fatal(err)
		}
		if dst := proto.MAC(buf[:6]); dst != proto.Broadcast || !bytes.Equal(buf[:n], f) {
			t.Fatalf("board read %x; want %x", buf[:n], f)
		}
	})
}

func TestOpenEthernetErrors(t *testing.T) {
	a, _ := linktest.VethPair(t)
	tests := []struct {
		name   string
		ifname string
		want   []string
	}{
		{"missing interface", "nosuch0", []string{`"nosuch0"`, "no network interface"}},
		{"name too long", "an-interface-name-too-long", []string{"an-interface-name-too-long"}},
		{"not Ethernet", "lo", []string{`"lo"`, "not an Ethernet interface"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Do(func() error {
				e, err := link.OpenEthernet(tc.ifname)
				if err == nil {
					e.Close()
				}
				return err
			})
			if err == nil {
				t.Fatalf("OpenEthernet(%q) succeeded", tc.ifname)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

// TestOpenEthernetWithoutCapNetRaw drops CAP_NET_RAW from one thread only (capabilities are per
// thread on Linux) and opens a socket there.
func TestOpenEthernetWithoutCapNetRaw(t *testing.T) {
	a, _ := linktest.VethPair(t)
	err := a.Do(func() error {
		runtime.LockOSThread() // Do's thread is locked already and is never reused
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var caps [2]unix.CapUserData
		if err := unix.Capget(&hdr, &caps[0]); err != nil {
			return err
		}
		caps[0].Effective &^= 1 << unix.CAP_NET_RAW
		if err := unix.Capset(&hdr, &caps[0]); err != nil {
			return err
		}
		e, err := link.OpenEthernet(a.Interface())
		if err == nil {
			e.Close()
			return errors.New("opened a raw socket without CAP_NET_RAW")
		}
		return err
	})
	if !errors.Is(err, link.ErrNotPermitted) {
		t.Fatalf("got %v, want ErrNotPermitted", err)
	}
	for _, w := range []string{"CAP_NET_RAW", "sudo setcap cap_net_raw+ep <binary>"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %s", err, w)
		}
	}
}

// TestEthernetSpin checks that polling before blocking changes only how a frame is waited for:
// frames arrive whether they come during the spin or after it, the read timeout holds, and a
// spinning reader still sees Close.
func TestEthernetSpin(t *testing.T) {
	a, b := linktest.VethPair(t)
	host, board := a.OpenEthernet(t), b.OpenEthernet(t)
	host.SetSpin(2 * time.Millisecond)
	setTimeout(t, 50*time.Millisecond, host)
	buf := make([]byte, proto.MaxFrameLen)
	for _, delay := range []time.Duration{0, 10 * time.Millisecond} { // within and after the spin
		f := frame(t, board.LocalMAC(), proto.SensorLen, 3)
		go func() {
			time.Sleep(delay)
			_ = board.WriteFrame(f)
		}()
		n, err := host.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], f) {
			t.Fatalf("delay %v: %d bytes, %v", delay, n, err)
		}
	}
	start := time.Now()
	if _, err := host.ReadFrame(buf); !errors.Is(err, link.ErrTimeout) {
		t.Fatalf("no frame: %v, want a timeout", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("timed out after %v, before the 50 ms asked", waited)
	}
	host.SetSpin(time.Hour)
	go func() { time.Sleep(5 * time.Millisecond); host.Close() }()
	if _, err := host.ReadFrame(buf); !errors.Is(err, link.ErrClosed) {
		t.Fatalf("read while closing: %v, want ErrClosed", err)
	}
}
