package host

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/proto"
)

func TestLossAccounting(t *testing.T) {
	type pkt struct{ sensorIndex, packetLoss uint16 }
	for _, tc := range []struct {
		name                    string
		packets                 []pkt
		sensorLoss, commandLoss uint64
		sensorBursts            map[int]uint64 // burst length -> count
		commandBursts           map[int]uint64
	}{
		{"clean", []pkt{{1, 0}, {2, 0}, {3, 0}}, 0, 0, nil, nil},
		{"single sensor losses", []pkt{{1, 0}, {3, 0}, {4, 0}, {6, 0}}, 2, 0, map[int]uint64{1: 2}, nil},
		{"a burst of three", []pkt{{1, 0}, {5, 0}}, 3, 0, map[int]uint64{3: 1}, nil},
		{"index wraps", []pkt{{65534, 0}, {65535, 0}, {0, 0}, {2, 0}}, 1, 0, map[int]uint64{1: 1}, nil},
		{"long burst lands in the last bucket", []pkt{{1, 0}, {100, 0}}, 98, 0, map[int]uint64{BurstBuckets: 1}, nil},
		{"command loss from packet_loss growth", []pkt{{1, 0}, {2, 1}, {3, 1}, {4, 3}}, 0, 3, nil, map[int]uint64{1: 1, 2: 1}},
		{"packet_loss already counted before our first packet", []pkt{{7, 4}, {8, 4}}, 0, 4, nil, nil},
		{"packet_loss wraps", []pkt{{1, 65535}, {2, 1}}, 0, 65535 + 2, nil, map[int]uint64{2: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, Config{Logger: discardLogger()})
			for _, p := range tc.packets {
				s.account(&proto.Sensor{SensorIndex: p.sensorIndex, PacketLoss: p.packetLoss}, 0)
			}
			st := s.Stats()
			if st.SensorLoss != tc.sensorLoss || st.CommandLoss != tc.commandLoss {
				t.Fatalf("sensor loss %d command loss %d, want %d %d", st.SensorLoss, st.CommandLoss, tc.sensorLoss, tc.commandLoss)
			}
			for name, h := range map[string]struct {
				got  [BurstBuckets]uint64
				want map[int]uint64
			}{"sensor": {st.SensorLossBursts, tc.sensorBursts}, "command": {st.CommandLossBursts, tc.commandBursts}} {
				for k := 1; k <= BurstBuckets; k++ {
					if h.got[k-1] != h.want[k] {
						t.Fatalf("%s bursts of %d: %d, want %d (%v)", name, k, h.got[k-1], h.want[k], h.got)
					}
				}
			}
		})
	}
}

func TestLatencyFromLastCommandIndex(t *testing.T) {
	s := New(nil, Config{Logger: discardLogger()})
	ms := time.Millisecond
	for i := range uint16(5) {
		s.sendTimes[i%sendRingSize] = sendRecord{index: i, valid: true, at: time.Duration(i) * ms}
	}
	// Command 0 acknowledged 1 ms after it was sent, then held (no new sample), then 2 and 3
	// (1 was lost), 4 is late by 3 ms. An index the ring has overwritten is not timed.
	for _, p := range []struct {
		last uint16
		at   time.Duration
	}{{0, 1 * ms}, {0, 2 * ms}, {2, 3 * ms}, {3, 4 * ms}, {4, 7 * ms}, {4 + sendRingSize, 8 * ms}} {
		s.account(&proto.Sensor{LastCmdIndex: p.last}, p.at)
	}
	st := s.Stats()
	// Percentiles are exact to within the histogram's 0.8% buckets.
	if st.LatencySamples != 4 || st.LatencyMax != 3*ms || st.LatencyP50 < ms*99/100 || st.LatencyP50 > ms*101/100 {
		t.Fatalf("latency samples %d p50 %v max %v, want 4, 1ms, 3ms", st.LatencySamples, st.LatencyP50, st.LatencyMax)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
