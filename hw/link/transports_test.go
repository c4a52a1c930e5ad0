package link_test

import (
	"testing"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/hw/proto"
)

// linkPair is the two sides of one link, opened for a test and closed by its cleanup.
type linkPair struct {
	host, board       link.Conn
	hostMAC, boardMAC proto.MAC
}

// Locally administered addresses for the links that have no hardware.
var (
	hostMAC  = proto.MAC{0x02, 0, 0, 0, 0, 0x01}
	boardMAC = proto.MAC{0x02, 0, 0, 0, 0, 0x02}
)

var transports = []struct {
	name string
	open func(testing.TB) linkPair
}{
	{"pipe", openPipe},
	{"udp", openUDP},
	{"ethernet", openEthernet},
}

func openPipe(tb testing.TB) linkPair {
	host, board := link.Pipe()
	tb.Cleanup(func() { host.Close(); board.Close() })
	return linkPair{host: host, board: board, hostMAC: hostMAC, boardMAC: boardMAC}
}

func openUDP(tb testing.TB) linkPair {
	board, err := link.ListenUDP("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { board.Close() })
	host, err := link.DialUDP(board.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { host.Close() })
	return linkPair{host: host, board: board, hostMAC: hostMAC, boardMAC: boardMAC}
}

func openEthernet(tb testing.TB) linkPair {
	a, b := linktest.VethPair(tb)
	host, board := a.OpenEthernet(tb), b.OpenEthernet(tb)
	return linkPair{host: host, board: board, hostMAC: host.LocalMAC(), boardMAC: board.LocalMAC()}
}

// frame builds a master-board frame from src around a payload of n bytes starting at fill.
func frame(tb testing.TB, src proto.MAC, n int, fill byte) []byte {
	tb.Helper()
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = fill + byte(i)
	}
	f := make([]byte, proto.FrameLen(n))
	if _, err := proto.PutFrame(f, src, payload); err != nil {
		tb.Fatal(err)
	}
	return f
}
