package host

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

var boardMAC = proto.MAC{0x02, 0, 0, 0, 0, 0xb0}

func frameOf(t testing.TB, payload []byte) []byte {
	t.Helper()
	f := make([]byte, proto.FrameLen(len(payload)))
	if _, err := proto.PutFrame(f, boardMAC, payload); err != nil {
		t.Fatal(err)
	}
	return f
}

func sensorFrame(t testing.TB, session, index uint16) []byte {
	s := proto.Sensor{SessionID: session, SensorIndex: index}
	var p [proto.SensorLen]byte
	if err := s.Marshal(p[:]); err != nil {
		t.Fatal(err)
	}
	return frameOf(t, p[:])
}

// controllingSession is a session that believes it is connected as id 7, reading from a pipe
// whose other end the test writes board frames into.
func controllingSession(t testing.TB) (*Session, *link.PipeEnd) {
	h, b := link.Pipe()
	t.Cleanup(func() { h.Close(); b.Close() })
	s := New(h, Config{SessionID: 7, Logger: discardLogger()})
	s.start(controlling, 0x3f)
	return s, b
}

func TestMalformedFramesAreCountedAndSkipped(t *testing.T) {
	valid := sensorFrame(t, 7, 1)
	wrongType := append([]byte{}, valid...)
	wrongType[12] = 0x08
	longField := append([]byte{}, valid...)
	longField[14], longField[15] = 0xff, 0x00
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"wrong EtherType", wrongType},
		{"length field beyond the frame", longField},
		{"unknown payload length", frameOf(t, make([]byte, 17))},
		{"v3 sensor packet", frameOf(t, make([]byte, 200))},
		{"oversize frame", make([]byte, 1000)},
		{"header only", valid[:proto.FrameHeaderLen]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, board := controllingSession(t)
				for _, f := range [][]byte{tc.frame, valid} {
					if err := board.WriteFrame(f); err != nil {
						t.Fatal(err)
					}
				}
				var in proto.Sensor
				if err := s.Receive(&in); err != nil || in.SensorIndex != 1 {
					t.Fatalf("Receive after a malformed frame: %v (%+v)", err, in)
				}
				if st := s.Stats(); st.Malformed != 1 || st.SensorsReceived != 1 {
					t.Fatalf("stats %+v", st)
				}
			})
		})
	}
}

// FuzzSessionFrames feeds arbitrary frames to a connected session, then to one connecting: no
// panic, and only the documented errors.
func FuzzSessionFrames(f *testing.F) {
	f.Add(sensorFrame(f, 7, 3))
	f.Add(sensorFrame(f, 9, 3))
	f.Add(frameOf(f, []byte{4, 0, 7, 0, 0x3f}))
	f.Add(frameOf(f, []byte{5, 0, 7, 0, 0x3f}))
	f.Add(frameOf(f, []byte{7, 0, 1}))
	f.Add(frameOf(f, make([]byte, 200)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		synctest.Test(t, func(t *testing.T) {
			s, board := controllingSession(t)
			if board.WriteFrame(frame) != nil {
				return // the link refuses it: not an Ethernet frame
			}
			var in proto.Sensor
			err := s.Receive(&in)
			if err != nil && !errors.Is(err, ErrSensorTimeout) && !errors.Is(err, ErrCommandsIgnored) {
				t.Fatalf("Receive: %v", err)
			}

			h, b := link.Pipe()
			defer h.Close()
			defer b.Close()
			c := New(h, Config{SessionID: 7, InitTimeout: 5 * time.Millisecond, Logger: discardLogger()})
			_ = b.WriteFrame(frame)
			_, err = c.Connect(context.Background())
			var vm *proto.VersionMismatchError
			var other *OtherSessionError
			if err != nil && !errors.Is(err, ErrNoAnswer) && !errors.As(err, &vm) && !errors.As(err, &other) &&
				!errors.Is(err, proto.ErrProtocolV3) {
				t.Fatalf("Connect: %v", err)
			}
		})
	})
}
