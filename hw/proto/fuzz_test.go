package proto

import (
	"errors"
	"testing"
)

// FuzzParsePayload feeds arbitrary frames through the whole receive path: parse, then decode the
// payload as its kind and re-encode it. Nothing may panic, and every error must be one of ours.
func FuzzParsePayload(f *testing.F) {
	for _, n := range []int{InitLen, AckLen, CommandLen, SensorLen, 3, 200, 0, 17} {
		frame := make([]byte, FrameLen(n))
		if _, err := PutFrame(frame, MAC{2}, make([]byte, n)); err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	g := sensorGolden()
	frame := make([]byte, FrameLen(len(g)))
	_, _ = PutFrame(frame, MAC{2}, g)
	f.Add(frame)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		kind, p, err := ParsePayload(frame)
		if err != nil {
			for _, known := range []error{ErrShortFrame, ErrEtherType, ErrLengthField, ErrPayloadLength, ErrProtocolV3} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		switch kind {
		case KindInit:
			var m Init
			if err := m.Unmarshal(p); err != nil {
				t.Fatal(err)
			}
		case KindAck:
			var m Ack
			if err := m.Unmarshal(p); err != nil {
				t.Fatal(err)
			}
		case KindCommand:
			var m Command
			if err := m.Unmarshal(p); err != nil {
				t.Fatal(err)
			}
			var out [CommandLen]byte
			if _, err := m.Marshal(out[:]); err != nil {
				t.Fatalf("decoded command does not re-encode: %v", err)
			}
		case KindSensor:
			var m Sensor
			if err := m.Unmarshal(p); err != nil {
				t.Fatal(err)
			}
			var out [SensorLen]byte
			if err := m.Marshal(out[:]); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("kind %v without error", kind)
		}
	})
}
