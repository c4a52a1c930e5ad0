package link_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// BenchmarkRoundTrip sends a command frame and waits for the echo from a goroutine on the other
// side; both sides run on locked OS threads, as the control loop and the board would. It reports
// the median and 99th percentile round trip in microseconds.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tr := range []struct {
		name string
		open func(testing.TB) linkPair
	}{
		{"ethernet-veth", openEthernet},
		{"udp-loopback", openUDP},
		{"pipe", openPipe},
	} {
		b.Run(tr.name, func(b *testing.B) { benchRoundTrip(b, tr.open(b)) })
	}
}

func benchRoundTrip(b *testing.B, p linkPair) {
	setTimeout(b, time.Second, p.host, p.board)
	echoDone := make(chan error, 1)
	go func() { echoDone <- echo(p.board) }()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := frame(b, p.hostMAC, proto.CommandLen, 1)
	buf := make([]byte, proto.MaxFrameLen)
	exchange := func() {
		if err := p.host.WriteFrame(cmd); err != nil {
			b.Fatal(err)
		}
		if _, err := p.host.ReadFrame(buf); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 {
		exchange() // wake both threads, fill caches; UDP: the board learns its peer
	}
	rtts := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range rtts {
		start := time.Now()
		exchange()
		rtts[i] = time.Since(start)
	}
	b.StopTimer()

	p.board.Close()
	if err := <-echoDone; err != nil {
		b.Fatal(err)
	}
	slices.Sort(rtts)
	b.ReportMetric(percentileMicros(rtts, 0.50), "p50-us")
	b.ReportMetric(percentileMicros(rtts, 0.99), "p99-us")
}

// echo sends every frame it reads straight back until c is closed.
func echo(c link.Conn) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, proto.MaxFrameLen)
	for {
		n, err := c.ReadFrame(buf)
		switch err {
		case nil:
		case link.ErrTimeout:
			continue
		case link.ErrClosed:
			return nil
		default:
			return err
		}
		if err := c.WriteFrame(buf[:n]); err != nil {
			return err
		}
	}
}

func percentileMicros(sorted []time.Duration, q float64) float64 {
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Microsecond)
}
