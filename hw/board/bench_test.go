package board

import (
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

// BenchmarkHandleAndTick is the board's work for one received command: decode it, run the SPI
// exchange, 1 ms of first-order plant at 10 kHz and encode the sensor packet.
func BenchmarkHandleAndTick(b *testing.B) {
	bd, _ := activeBoard(&testing.T{}, Config{}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 1, 0.02, false)
	payload := commandPayload(b, &c)
	b.ReportAllocs()
	for b.Loop() {
		payload[proto.CommandLen-2]++
		bd.HandlePayload(payload)
		bd.Tick()
	}
}
