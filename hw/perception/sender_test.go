package perception_test

import (
	"errors"
	"math"
	"net"
	"testing"

	"github.com/dualforce/dualforce/hw/perception"
)

// A send that cannot go out fails at once with the reason, and nothing panics.
func TestSendFails(t *testing.T) {
	s, err := perception.Dial("127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	d := sample(1)
	if err := s.Send(&d); err != nil {
		t.Fatalf("send: %v", err)
	}
	bad := sample(2)
	bad.Heights[3] = float32(math.Inf(1))
	if err := s.Send(&bad); !errors.Is(err, perception.ErrNonFinite) {
		t.Fatalf("non-finite sample: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&d); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestDialRefusesBadAddress(t *testing.T) {
	for _, addr := range []string{"", "no-port", "127.0.0.1:99999", "127.0.0.1:0", ":9750"} {
		if s, err := perception.Dial(addr); err == nil {
			s.Close()
			t.Errorf("Dial(%q) succeeded", addr)
		}
	}
}

// BenchmarkSend is one datagram encoded and sent on loopback (with nobody listening): what a
// simulated robot's tick thread pays per perception sample.
func BenchmarkSend(b *testing.B) {
	s, err := perception.Dial("127.0.0.1:9")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := sample(1)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Send(&d); err != nil {
			b.Fatal(err)
		}
	}
}
