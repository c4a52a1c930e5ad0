package board

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

// sent is a run of ticks on which the firmware's rules predict what the board sends: nothing, an
// ack, or sensor packets whose sensor_index counts up from index by one per tick.
type sent struct {
	ticks int
	kind  proto.Kind // KindUnknown: nothing
	// session is the ack's or the sensor packet's session_id; loss and lastCmd are the sensor
	// packet's packet_loss and last_cmd_index.
	session, index, loss, lastCmd uint16
}

func acks(n int, session uint16) sent { return sent{ticks: n, kind: proto.KindAck, session: session} }

func sensors(n int, session, index, loss, lastCmd uint16) sent {
	return sent{ticks: n, kind: proto.KindSensor, session: session, index: index, loss: loss, lastCmd: lastCmd}
}

// golden is one step of a transcript: an action, then what each tick sends, then the state.
type golden struct {
	act   func(*testing.T, *Board)
	want  sent
	state State
}

// expect is the payload the rules predict on tick i of the run, and the byte ranges that must
// match it (a sensor packet's driver and IMU blocks are physics, not session rules).
func (w sent) expect(i int) (payload []byte, ranges [][2]int) {
	switch w.kind {
	case proto.KindAck:
		ack := []byte{byte(proto.Version), byte(proto.Version >> 8), byte(w.session), byte(w.session >> 8), allDrivers}
		return ack, [][2]int{{0, proto.AckLen}}
	case proto.KindSensor:
		p := make([]byte, proto.SensorLen)
		binary.LittleEndian.PutUint16(p[0:], w.session)
		binary.LittleEndian.PutUint16(p[202:], w.index+uint16(i))
		binary.LittleEndian.PutUint16(p[204:], w.loss)
		binary.LittleEndian.PutUint16(p[206:], w.lastCmd)
		return p, [][2]int{{0, 2}, {202, 208}}
	}
	return nil, nil
}

func runGolden(t *testing.T, steps []golden) {
	t.Helper()
	b, _ := newBoard(t, Config{}, [proto.NumMotors]float64{})
	for s, g := range steps {
		if g.act != nil {
			g.act(t, b)
		}
		for i := range g.want.ticks {
			got := b.Tick()
			want, ranges := g.want.expect(i)
			if len(got) != len(want) {
				t.Fatalf("step %d tick %d (state %v): sent %d bytes, want %d", s, i+1, b.State(), len(got), len(want))
			}
			for _, r := range ranges {
				if !bytes.Equal(got[r[0]:r[1]], want[r[0]:r[1]]) {
					t.Fatalf("step %d tick %d (state %v): bytes %d..%d are % x, want % x", s, i+1, b.State(),
						r[0], r[1]-1, got[r[0]:r[1]], want[r[0]:r[1]])
				}
			}
		}
		if b.State() != g.state {
			t.Fatalf("step %d: state %v, want %v", s, b.State(), g.state)
		}
	}
}

// TestFirmwareSessionRules replays the firmware's session rules (masterboard_main.c, protocol v4)
// byte for byte: the session_id, sensor_index and packet_loss of sensor packets are set only on
// entering SENDING_INIT_ACK (to the init's id, 0 and 0), so SPI_AUTODETECT still reports the
// previous session (0 after boot); and WAITING_FOR_INIT and ERROR take any init, id 0 and the
// failed session's own id included.
func TestFirmwareSessionRules(t *testing.T) {
	// session7 is session 7 from boot to ERROR: 51 autodetect packets still of session 0, an
	// ack, commands 0 and 3 (two lost), then silence until the watchdog; packet 72 is in ERROR.
	session7 := []golden{
		{initOf(7), sensors(51, 0, 1, 0, 0), StateSPIAutodetect},
		{nil, acks(1, 7), StateSendingInitAck},
		{commandOf(7, 0), sensors(1, 7, 1, 0, 0), StateActiveControl},
		{commandOf(7, 3), sensors(20, 7, 2, 2, 3), StateActiveControl},
		{nil, sensors(1, 7, 22, 2, 3), StateError},
		{nil, sensors(50, 7, 23, 2, 3), StateError},
	}
	for _, tc := range []struct {
		name  string
		steps []golden
	}{
		{"autodetect after boot reports session 0", []golden{
			{initOf(0x1234), sensors(51, 0, 1, 0, 0), StateSPIAutodetect},
			{nil, acks(3, 0x1234), StateSendingInitAck},
			{commandOf(0x1234, 100), sensors(1, 0x1234, 1, 0, 100), StateActiveControl},
		}},
		{"session id 0 is an id like any other", []golden{
			{initOf(0), sensors(51, 0, 1, 0, 0), StateSPIAutodetect},
			{nil, acks(1, 0), StateSendingInitAck},
			{commandOf(0, 5), sensors(1, 0, 1, 0, 5), StateActiveControl},
			{commandOf(0, 6), sensors(20, 0, 2, 0, 6), StateActiveControl},
		}},
		{"a new session in ERROR: the old id and counters until the ack", script(session7,
			golden{initOf(8), sensors(51, 7, 73, 2, 3), StateSPIAutodetect},
			golden{nil, acks(2, 8), StateSendingInitAck},
			golden{commandOf(7, 4), acks(1, 8), StateSendingInitAck},
			golden{commandOf(8, 9), sensors(1, 8, 1, 0, 9), StateActiveControl},
		)},
		{"ERROR takes an init of the failed session's own id", script(session7,
			golden{initOf(7), sensors(51, 7, 73, 2, 3), StateSPIAutodetect},
			golden{nil, acks(1, 7), StateSendingInitAck},
			golden{commandOf(7, 50), sensors(1, 7, 1, 0, 50), StateActiveControl},
		)},
		{"an init of id 0 in ERROR after a session of id 0", script([]golden{
			{initOf(0), sensors(51, 0, 1, 0, 0), StateSPIAutodetect},
			{nil, acks(1, 0), StateSendingInitAck},
			{commandOf(0, 0), sensors(20, 0, 1, 0, 0), StateActiveControl},
			{nil, sensors(1, 0, 21, 0, 0), StateError}},
			golden{initOf(0), sensors(51, 0, 22, 0, 0), StateSPIAutodetect},
			golden{nil, acks(1, 0), StateSendingInitAck},
			golden{commandOf(0, 1), sensors(1, 0, 1, 0, 1), StateActiveControl},
		)},
	} {
		t.Run(tc.name, func(t *testing.T) { runGolden(t, tc.steps) })
	}
}
