package host_test

import (
	"context"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/proto"
)

// BenchmarkLockstepPipe is one control step against the emulated board in-process: the host
// encodes and sends a command, the board decodes it, ticks (1 ms of plant) and answers, the host
// validates the sensor packet and updates its statistics. Steady state must not allocate.
func BenchmarkLockstepPipe(b *testing.B) {
	r := startBoard(b, board.Config{}, server.Options{Lockstep: true})
	log, _ := newLogger()
	benchRoundTrips(b, host.New(r.host, host.Config{Logger: log}), enableAll(1, 0.01, 0.5))
}

// benchRoundTrips connects s, then times command/sensor round trips and reports the session's
// latency percentiles; it fails on any lost packet.
func benchRoundTrips(b *testing.B, s *host.Session, cmd proto.Command) {
	if _, err := s.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	var in proto.Sensor
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Send(&cmd); err != nil {
			b.Fatal(err)
		}
		if err := s.Receive(&in); err != nil {
			b.Fatal(err)
		}
	}
	st := s.Stats()
	if st.CommandLoss != 0 || st.SensorLoss != 0 {
		b.Fatalf("lost packets: %+v", st)
	}
	b.ReportMetric(float64(st.LatencyP50.Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(st.LatencyP99.Nanoseconds())/1e3, "p99-us")
}
