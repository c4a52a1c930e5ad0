package link_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

func TestUDPBoardAnswersLastPeer(t *testing.T) {
	board, err := link.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer board.Close()
	if err := board.WriteFrame(frame(t, boardMAC, proto.AckLen, 0)); err != link.ErrNoPeer {
		t.Fatalf("write before any host spoke: %v, want ErrNoPeer", err)
	}
	var hosts []*link.UDP
	for range 2 {
		h, err := link.DialUDP(board.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		hosts = append(hosts, h)
	}
	setTimeout(t, time.Second, board, hosts[0], hosts[1])
	buf := make([]byte, proto.MaxFrameLen)
	for i, h := range hosts {
		if err := h.WriteFrame(frame(t, hostMAC, proto.InitLen, byte(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := board.ReadFrame(buf); err != nil {
			t.Fatal(err)
		}
		reply := frame(t, boardMAC, proto.AckLen, byte(i))
		if err := board.WriteFrame(reply); err != nil {
			t.Fatal(err)
		}
		n, err := h.ReadFrame(buf)
		if err != nil || !bytes.Equal(buf[:n], reply) {
			t.Fatalf("host %d read %x, %v; want %x", i, buf[:n], err, reply)
		}
	}
	setTimeout(t, 30*time.Millisecond, hosts[0])
	if _, err := hosts[0].ReadFrame(buf); err != link.ErrTimeout {
		t.Fatalf("first host got the reply to the second: %v", err)
	}
}

func TestUDPHostIgnoresStrangers(t *testing.T) {
	p := openUDP(t)
	host := p.host.(*link.UDP)
	stranger, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.WriteToUDPAddrPort(frame(t, boardMAC, proto.AckLen, 7), host.Addr()); err != nil {
		t.Fatal(err)
	}
	setTimeout(t, 30*time.Millisecond, host)
	if n, err := host.ReadFrame(make([]byte, proto.MaxFrameLen)); err != link.ErrTimeout {
		t.Fatalf("host read a stranger's datagram: %d bytes, %v", n, err)
	}
}

func TestUDPBadAddresses(t *testing.T) {
	for _, addr := range []string{"no-port", "127.0.0.1:99999", "[::1"} {
		if c, err := link.DialUDP(addr); err == nil {
			c.Close()
			t.Errorf("DialUDP(%q) succeeded", addr)
		}
		if c, err := link.ListenUDP(addr); err == nil {
			c.Close()
			t.Errorf("ListenUDP(%q) succeeded", addr)
		}
	}
}
