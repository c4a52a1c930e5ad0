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
// the median and 99th percentile round trip in microseconds. The pipe also runs unlocked, as
// lockstep tests use it: a hand-over between two locked threads costs two thread wake-ups, one
// between goroutines sharing a thread costs none.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tr := range []struct {
		name   string
		open   func(testing.TB) linkPair
		locked bool
	}{
		{"ethernet-veth", openEthernet, true},
		{"udp-loopback", openUDP, true},
		{"pipe", openPipe, true},
		{"pipe-unlocked", openPipe, false},
	} {
		b.Run(tr.name, func(b *testing.B) { benchRoundTrip(b, tr.open(b), tr.locked) })
	}
}

func benchRoundTrip(b *testing.B, p linkPair, locked bool) {
	setTimeout(b, time.Second, p.host, p.board)
	echoDone := make(chan error, 1)
	go func() {
		if locked {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		echoDone <- echo(p.board)
	}()

	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
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
