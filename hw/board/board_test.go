package board

import (
	"errors"
	"math"
	"testing"

	"github.com/dualforce/dualforce/hw/proto"
)

const (
	ack    = proto.AckLen
	sensor = proto.SensorLen
	none   = 0
)

// step is one line of a state-machine script: an optional action, then ticks, each of which must
// send a payload of length sends, after which the board must be in state.
type step struct {
	act   func(t *testing.T, b *Board)
	ticks int
	sends int
	state State
}

func receive(p func(t testing.TB) []byte) func(*testing.T, *Board) {
	return func(t *testing.T, b *Board) {
		if reply := b.HandlePayload(p(t)); reply != nil {
			t.Fatalf("unexpected reply % x", reply)
		}
	}
}

func initOf(s uint16) func(*testing.T, *Board) {
	return receive(func(testing.TB) []byte { return initPayload(proto.Version, s) })
}

func commandOf(s, i uint16) func(*testing.T, *Board) {
	return receive(func(t testing.TB) []byte { return idleCommand(t, s, i) })
}

func linkUp(up bool) func(*testing.T, *Board) {
	return func(_ *testing.T, b *Board) { b.SetLinkUp(up) }
}

// toAck is an init of session 7 and the whole autodetection: 51 sensor packets, then the first ack.
var toAck = []step{
	{act: initOf(7), state: StateSPIAutodetect},
	{ticks: 51, sends: sensor, state: StateSPIAutodetect},
	{ticks: 1, sends: ack, state: StateSendingInitAck},
}

// toControl continues toAck with the first command.
var toControl = append(append([]step{}, toAck...), step{act: commandOf(7, 0), ticks: 1, sends: sensor, state: StateActiveControl})

// toError continues toControl with the 20 ms timeout.
var toError = append(append([]step{}, toControl...),
	step{ticks: 19, sends: sensor, state: StateActiveControl},
	step{ticks: 1, sends: sensor, state: StateError},
)

func script[S any](prefix []S, more ...S) []S { return append(append([]S{}, prefix...), more...) }

func TestStateMachine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"boot waits for init silently", []step{{ticks: 2000, sends: none, state: StateWaitingForInit}}},
		{"session id 0 starts a session", []step{
			{act: initOf(0), ticks: 51, sends: sensor, state: StateSPIAutodetect},
			{ticks: 1, sends: ack, state: StateSendingInitAck}}},
		{"commands before init are ignored", []step{{act: commandOf(0, 0), ticks: 5, sends: none, state: StateWaitingForInit}}},
		{"init, 51 ticks of autodetect, then acks", script(toAck, step{ticks: 500, sends: ack, state: StateSendingInitAck})},
		{"no command 1000 ms after the ack", script(toAck,
			step{ticks: 1000, sends: ack, state: StateSendingInitAck},
			step{ticks: 1, sends: sensor, state: StateError})},
		{"foreign command does not end the ack phase", script(toAck,
			step{act: commandOf(8, 0), ticks: 1000, sends: ack, state: StateSendingInitAck},
			step{ticks: 1, sends: sensor, state: StateError})},
		{"command during autodetect is ignored", []step{
			{act: initOf(7), ticks: 10, sends: sensor, state: StateSPIAutodetect},
			{act: commandOf(7, 0), ticks: 41, sends: sensor, state: StateSPIAutodetect},
			{ticks: 1, sends: ack, state: StateSendingInitAck}}},
		{"first command starts control", script(toControl, step{ticks: 19, sends: sensor, state: StateActiveControl})},
		{"20 ms without command is tolerated, the 21st tick is ERROR", script(toControl,
			step{act: commandOf(7, 1), ticks: 20, sends: sensor, state: StateActiveControl},
			step{ticks: 1, sends: sensor, state: StateError})},
		{"each command restarts the watchdog", script(toControl,
			step{act: commandOf(7, 1), ticks: 20, sends: sensor, state: StateActiveControl},
			step{act: commandOf(7, 2), ticks: 20, sends: sensor, state: StateActiveControl},
			step{ticks: 1, sends: sensor, state: StateError})},
		{"foreign commands do not feed the watchdog", script(toControl,
			step{act: commandOf(7, 1), ticks: 10, sends: sensor, state: StateActiveControl},
			step{act: commandOf(9, 2), ticks: 10, sends: sensor, state: StateActiveControl},
			step{act: commandOf(9, 3), ticks: 1, sends: sensor, state: StateError})},
		{"init during control is ignored", script(toControl,
			step{act: initOf(8), ticks: 1, sends: sensor, state: StateActiveControl})},
		{"ERROR keeps sending sensor packets", script(toError, step{ticks: 3000, sends: sensor, state: StateError})},
		{"ERROR ignores the old session's commands", script(toError,
			step{act: commandOf(7, 50), ticks: 5, sends: sensor, state: StateError})},
		{"ERROR takes an init of the same session", script(toError,
			step{act: initOf(7), ticks: 51, sends: sensor, state: StateSPIAutodetect},
			step{ticks: 1, sends: ack, state: StateSendingInitAck})},
		{"a new session leaves ERROR", script(toError,
			step{act: initOf(8), state: StateSPIAutodetect},
			step{ticks: 51, sends: sensor, state: StateSPIAutodetect},
			step{ticks: 1, sends: ack, state: StateSendingInitAck},
			step{act: commandOf(7, 0), ticks: 1, sends: ack, state: StateSendingInitAck},
			step{act: commandOf(8, 0), ticks: 1, sends: sensor, state: StateActiveControl})},
		{"link loss in control", script(toControl,
			step{act: linkUp(false), ticks: 100, sends: none, state: StateLinkDown},
			step{act: commandOf(7, 1), ticks: 1, sends: none, state: StateLinkDown},
			step{act: linkUp(true), ticks: 1, sends: sensor, state: StateError},
			step{act: initOf(8), state: StateSPIAutodetect})},
		{"link loss while waiting for init is ignored", []step{
			{act: linkUp(false), ticks: 5, sends: none, state: StateWaitingForInit},
			{act: initOf(7), ticks: 5, sends: none, state: StateWaitingForInit},
			{act: linkUp(true), state: StateWaitingForInit},
			{act: initOf(7), ticks: 1, sends: sensor, state: StateSPIAutodetect}}},
		{"link loss during the ack phase", script(toAck,
			step{act: linkUp(false), ticks: 2000, sends: none, state: StateLinkDown},
			step{act: linkUp(true), ticks: 1, sends: sensor, state: StateError})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBoard(t, Config{}, [proto.NumMotors]float64{})
			for i, s := range tc.steps {
				if s.act != nil {
					s.act(t, b)
				}
				tickSending(t, b, s.ticks, s.sends)
				if b.State() != s.state {
					t.Fatalf("step %d: state %v, want %v", i, b.State(), s.state)
				}
			}
		})
	}
}

func TestAckAndSessionID(t *testing.T) {
	b, _ := newBoard(t, Config{AbsentDrivers: 1 << 5}, [proto.NumMotors]float64{})
	b.HandlePayload(initPayload(proto.Version, 0xBEEF))
	var out []byte
	for len(out) != proto.AckLen {
		out = b.Tick()
		if len(out) == proto.SensorLen && decodeSensor(t, out).SessionID != 0 {
			t.Fatal("autodetect sensor packet after boot carries a session id other than 0")
		}
	}
	var a proto.Ack
	if err := a.Unmarshal(out); err != nil {
		t.Fatal(err)
	}
	if want := (proto.Ack{Version: proto.Version, SessionID: 0xBEEF, SPIConnected: 0x1f}); a != want {
		t.Fatalf("ack %+v, want %+v", a, want)
	}
}

func TestVersionMismatch(t *testing.T) {
	for _, tc := range []struct {
		name         string
		board, host  uint16
		wantReplyVer uint16 // 0: no reply, init accepted
	}{
		{"v5 board, v4 host", 5, 4, 5},
		{"v4 board, v5 host", 4, 5, 4},
		{"v5 board, v5 host", 5, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBoard(t, Config{Version: tc.board}, [proto.NumMotors]float64{})
			reply := b.HandlePayload(initPayload(tc.host, 42))
			if tc.wantReplyVer == 0 {
				if reply != nil || b.State() != StateSPIAutodetect {
					t.Fatalf("reply % x, state %v: want the init accepted", reply, b.State())
				}
				return
			}
			var a proto.Ack
			if err := a.Unmarshal(reply); err != nil {
				t.Fatalf("reply % x: %v", reply, err)
			}
			if a.Version != tc.wantReplyVer || a.SessionID != 42 {
				t.Fatalf("ack %+v, want version %d session 42", a, tc.wantReplyVer)
			}
			if b.State() != StateWaitingForInit {
				t.Fatalf("state %v: the init must be ignored", b.State())
			}
			tickSending(t, b, 10, none)
		})
	}
}

func TestProtocolV3Board(t *testing.T) {
	b, _ := newBoard(t, Config{Version: 3}, [proto.NumMotors]float64{})
	if reply := b.HandlePayload(initPayload(proto.Version, 7)); reply != nil {
		t.Fatalf("v3 board replied % x to an init", reply)
	}
	tickSending(t, b, 51, 200)
	out := b.Tick()
	if len(out) != 3 || out[0] != 7 || out[1] != 0 || out[2] != 0x3f {
		t.Fatalf("v3 ack % x, want 07 00 3f", out)
	}
	if _, err := proto.KindOfLength(len(out)); !errors.Is(err, proto.ErrProtocolV3) {
		t.Fatalf("KindOfLength(3) = %v, want ErrProtocolV3", err)
	}
	b.HandlePayload(idleCommand(t, 7, 0))
	out = b.Tick()
	if len(out) != 200 {
		t.Fatalf("v3 sensor packet %d bytes, want 200", len(out))
	}
	// The counters close the packet, right after the IMU: sensor_index is 1 after the reset.
	if out[194] != 1 || out[195] != 0 {
		t.Fatalf("v3 sensor_index bytes % x, want 01 00", out[194:196])
	}
}

func TestCounters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indices []uint16
		loss    uint16
	}{
		{"consecutive", []uint16{10, 11, 12, 13}, 0},
		{"one gap of two", []uint16{10, 11, 14}, 2},
		{"two gaps", []uint16{0, 2, 3, 7}, 4},
		{"index wraps without loss", []uint16{65534, 65535, 0, 1}, 0},
		{"gap across the wrap", []uint16{65535, 2}, 2},
		{"a repeated index counts as 65535 lost (u16 arithmetic)", []uint16{5, 5}, 65535},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBoard(t, Config{}, [proto.NumMotors]float64{})
			b.HandlePayload(initPayload(proto.Version, 3))
			var last *proto.Sensor
			for b.State() == StateSPIAutodetect {
				if out := b.Tick(); len(out) == proto.SensorLen {
					last = decodeSensor(t, out)
				}
			}
			if last.SensorIndex != 51 {
				t.Fatalf("autodetect ended at sensor_index %d, want 51", last.SensorIndex)
			}
			for i, idx := range tc.indices {
				b.HandlePayload(idleCommand(t, 3, idx))
				s := decodeSensor(t, b.Tick())
				if s.SensorIndex != uint16(i+1) {
					t.Fatalf("sensor_index %d, want %d (reset on entering SENDING_INIT_ACK)", s.SensorIndex, i+1)
				}
				if s.LastCmdIndex != idx {
					t.Fatalf("last_cmd_index %d, want %d", s.LastCmdIndex, idx)
				}
				last = s
			}
			if last.PacketLoss != tc.loss {
				t.Fatalf("packet_loss %d, want %d", last.PacketLoss, tc.loss)
			}
			// Ticks without a command change neither last_cmd_index nor packet_loss.
			s := decodeSensor(t, b.Tick())
			if s.PacketLoss != tc.loss || s.LastCmdIndex != tc.indices[len(tc.indices)-1] {
				t.Fatalf("held tick: loss %d last %d", s.PacketLoss, s.LastCmdIndex)
			}
		})
	}
}

func TestPacketLossResetsWithNewSession(t *testing.T) {
	b, _ := activeBoard(t, Config{}, [proto.NumMotors]float64{})
	b.HandlePayload(idleCommand(t, 7, 10))
	if s := decodeSensor(t, b.Tick()); s.PacketLoss != 9 {
		t.Fatalf("packet_loss %d, want 9", s.PacketLoss)
	}
	tickSending(t, b, 20, sensor)
	if b.State() != StateError {
		t.Fatalf("state %v", b.State())
	}
	b.HandlePayload(initPayload(proto.Version, 8))
	for b.State() != StateSendingInitAck {
		b.Tick()
	}
	b.HandlePayload(idleCommand(t, 8, 500))
	if s := decodeSensor(t, b.Tick()); s.PacketLoss != 0 || s.SensorIndex != 1 || s.LastCmdIndex != 500 {
		t.Fatalf("new session: loss %d index %d last %d, want 0 1 500", s.PacketLoss, s.SensorIndex, s.LastCmdIndex)
	}
}

func TestHeldCommand(t *testing.T) {
	b, p := activeBoard(t, Config{AlignmentTicks: 10}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 1, 0.01, false)
	c.Motor(3).PositionRef = 0.5
	b.HandlePayload(commandPayload(t, &c))
	tickSending(t, b, 11, sensor) // 10 ticks of alignment, ready on the 11th
	want := MotorDrive{Enabled: true, MotorCommand: *onWire(t, &c).Motor(3)}
	if p.lastDrive[3] != want {
		t.Fatalf("drive %+v after alignment, want %+v", p.lastDrive[3], want)
	}
	// The PC misses packets: the drivers keep the last command (within the 20 ms timeout).
	for tick := range 9 {
		b.Tick()
		if d := p.lastDrive[3]; d != want {
			t.Fatalf("missed tick %d: drive %+v, want the held command", tick+1, d)
		}
	}
	// A late command replaces it; the latest wins when several arrive within one tick.
	c.Index, c.Motor(3).PositionRef = 2, -0.25
	b.HandlePayload(commandPayload(t, &c))
	c.Index, c.Motor(3).PositionRef = 3, 0.75
	b.HandlePayload(commandPayload(t, &c))
	b.Tick()
	if d := p.lastDrive[3]; math.Abs(d.PositionRef-0.75) > 1e-6 {
		t.Fatalf("drive position ref %v, want the latest 0.75", d.PositionRef)
	}
	if b.State() != StateActiveControl {
		t.Fatalf("state %v", b.State())
	}
}

func TestErrorDisablesMotorsUntilNewSession(t *testing.T) {
	const align = 30
	b, p := activeBoard(t, Config{AlignmentTicks: align}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 1, 0.01, false)
	for m := range proto.NumMotors {
		c.Motor(m).CurrentRef = 0.5
	}
	holdCommand(t, b, &c, align+1)
	for m := range proto.NumMotors {
		if !p.lastDrive[m].Enabled {
			t.Fatalf("motor %d not enabled after alignment", m)
		}
	}
	tickSending(t, b, 20, sensor)
	s := decodeSensor(t, b.Tick())
	if b.State() != StateError {
		t.Fatalf("state %v, want ERROR", b.State())
	}
	for m, d := range p.lastDrive {
		if d != (MotorDrive{}) {
			t.Fatalf("motor %d drive %+v in ERROR, want disabled and zero", m, d)
		}
	}
	for d, blk := range s.Drivers {
		if blk.Status != proto.StatusSystemEnabled {
			t.Fatalf("driver %d status %v in ERROR, want only SE", d, blk.Status)
		}
	}
	for m := range proto.NumMotors {
		if _, _, cur := s.Motor(m); cur != 0 {
			t.Fatalf("motor %d current %v in ERROR", m, cur)
		}
	}
	// A new session must enable the motors again, and they align again.
	b.HandlePayload(initPayload(proto.Version, 8))
	for b.State() != StateSendingInitAck {
		b.Tick()
	}
	c.SessionID, c.Index = 8, 0
	for tick := 1; tick <= align+1; tick++ {
		c.Index++
		b.HandlePayload(commandPayload(t, &c))
		s := decodeSensor(t, b.Tick())
		ready := s.Drivers[0].Status.MotorReady(0)
		if ready != (tick == align+1) {
			t.Fatalf("tick %d after re-enabling: ready %v", tick, ready)
		}
	}
}

func TestAlignment(t *testing.T) {
	for _, align := range []int{50, 100, 200} {
		b, p := activeBoard(t, Config{AlignmentTicks: align}, [proto.NumMotors]float64{})
		c := proto.Command{SessionID: 7, Index: 1}
		c.Drivers[2].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor2
		c.Motor(5).CurrentRef = 1
		for tick := 1; tick <= align+5; tick++ {
			c.Index++
			b.HandlePayload(commandPayload(t, &c))
			st := decodeSensor(t, b.Tick()).Drivers[2].Status
			if !st.MotorEnabled(1) || st.MotorEnabled(0) || st.MotorReady(0) {
				t.Fatalf("align %d tick %d: status %v", align, tick, st)
			}
			if ready := st.MotorReady(1); ready != (tick > align) {
				t.Fatalf("align %d tick %d: ready %v, want ready from tick %d", align, tick, ready, align+1)
			}
			if p.lastDrive[5].Enabled != (tick > align) {
				t.Fatalf("align %d tick %d: drive enabled %v", align, tick, p.lastDrive[5].Enabled)
			}
		}
		// Clearing the enable bit disables at once; enabling again re-aligns.
		c.Index, c.Drivers[2].Mode = c.Index+1, proto.ModeEnableSystem
		b.HandlePayload(commandPayload(t, &c))
		if st := decodeSensor(t, b.Tick()).Drivers[2].Status; st.MotorEnabled(1) || st.MotorReady(1) {
			t.Fatalf("disabled motor status %v", st)
		}
	}
}

func TestIndexPulses(t *testing.T) {
	const start = 0.3 // absolute angle of rotor 0 at power-on
	for _, tc := range []struct {
		name       string
		index      float64 // absolute angle of rotor 0's index
		compensate bool
		targets    []float64 // successive position refs, in the reported frame
		toggles    int
		jumpTo     float64 // reported position when the index is first seen (NaN: never seen)
	}{
		{"no crossing", 1, true, []float64{0.5}, 0, math.NaN()},
		{"crossing without compensation", 1, false, []float64{1.2}, 1, 1 - start},
		{"crossing with compensation jumps to 0", 1, true, []float64{1.2}, 1, 0},
		{"any multiple of 2π names the same pulses", 1 + 4*math.Pi, true, []float64{1.2}, 1, 0},
		// After compensation refs are in the index frame: -2 crosses the same pulse back down, then
		// 2π+0.1 crosses it and the next one up. The offset moves only at the first crossing.
		{"every crossing toggles, offset set once", 1, true, []float64{1.2, -2, 2*math.Pi + 0.1}, 4, 0},
		{"crossing downwards", -0.5, true, []float64{-1.5}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			cfg.AlignmentTicks = 10
			cfg.IndexAngle[0] = tc.index
			b, _ := activeBoard(t, cfg, [proto.NumMotors]float64{start})
			s := decodeSensor(t, b.Tick())
			if pos, _, _ := s.Motor(0); pos != 0 {
				t.Fatalf("reported position %v at power-on, want 0", pos)
			}
			toggles, lastToggle, jumpedTo := 0, false, math.NaN()
			for i, target := range tc.targets {
				c := enableCommand(7, uint16(1+i), 2, 0.05, tc.compensate)
				c.Motor(0).PositionRef = target
				for range 600 {
					b.HandlePayload(commandPayload(t, &c))
					s = decodeSensor(t, b.Tick())
					st := s.Drivers[0].Status
					if tg := st.IndexToggle(0); tg != lastToggle {
						toggles++
						lastToggle = tg
					}
					if st.IndexSeen(0) && math.IsNaN(jumpedTo) {
						jumpedTo, _, _ = s.Motor(0)
					}
				}
			}
			if toggles != tc.toggles {
				t.Fatalf("%d index toggles, want %d", toggles, tc.toggles)
			}
			if math.IsNaN(tc.jumpTo) != math.IsNaN(jumpedTo) || math.Abs(jumpedTo-tc.jumpTo) > 0.1 {
				t.Fatalf("reported %v when the index was first seen, want %v", jumpedTo, tc.jumpTo)
			}
			last := tc.targets[len(tc.targets)-1]
			if pos, _, _ := s.Motor(0); math.Abs(pos-last) > 1e-3 {
				t.Fatalf("reported position %v, want the last target %v", pos, last)
			}
			if s.Drivers[0].Status.IndexSeen(1) {
				t.Fatal("motor 1 never moved but reports its index")
			}
		})
	}
}

func TestSPIFaultAndDriverTimeout(t *testing.T) {
	b, p := activeBoard(t, Config{AlignmentTicks: 10}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 0, 0, false)
	c.Drivers[1].Mode = c.Drivers[1].Mode.WithTimeout(5)
	holdCommand(t, b, &c, 11)
	if err := b.SetSPIFault(1, true); err != nil {
		t.Fatal(err)
	}
	for tick := 1; tick <= 8; tick++ {
		c.Index++
		b.HandlePayload(commandPayload(t, &c))
		blk := decodeSensor(t, b.Tick()).Drivers[1]
		if blk != (proto.DriverSensor{Status: 0x000f}) || blk.Status.Error() != proto.ErrSPICRC {
			t.Fatalf("tick %d: failed transfer reported %+v, want a zero block with error 15", tick, blk)
		}
		// The card keeps its last command for 5 ms, then its own timeout disables it.
		if enabled := p.lastDrive[2].Enabled; enabled != (tick <= 5) {
			t.Fatalf("tick %d: card enabled %v", tick, enabled)
		}
	}
	if err := b.SetSPIFault(1, false); err != nil {
		t.Fatal(err)
	}
	c.Index++
	b.HandlePayload(commandPayload(t, &c))
	st := decodeSensor(t, b.Tick()).Drivers[1].Status
	if st.Error() != proto.ErrSPIRecvTimeout || st.MotorEnabled(0) || st.MotorEnabled(1) {
		t.Fatalf("after the fault: status %v, want SPI receive timeout with motors off", st)
	}
	// The card's error latches until the system is disabled; then motors can be enabled again.
	c.Index++
	c.Drivers[1].Mode = 0
	b.HandlePayload(commandPayload(t, &c))
	if st := decodeSensor(t, b.Tick()).Drivers[1].Status; st.Error() != proto.ErrNone || st&proto.StatusSystemEnabled != 0 {
		t.Fatalf("system disabled: status %v", st)
	}
	c.Index++
	c.Drivers[1].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1
	b.HandlePayload(commandPayload(t, &c))
	if st := decodeSensor(t, b.Tick()).Drivers[1].Status; !st.MotorEnabled(0) {
		t.Fatalf("re-enabled: status %v", st)
	}
	if s := decodeSensor(t, b.Tick()); s.Drivers[0].Status.Error() != proto.ErrNone {
		t.Fatal("the fault leaked to driver 0")
	}
}

func TestSPIFaultDuringAutodetect(t *testing.T) {
	b, _ := newBoard(t, Config{}, [proto.NumMotors]float64{})
	if err := b.SetSPIFault(4, true); err != nil {
		t.Fatal(err)
	}
	b.HandlePayload(initPayload(proto.Version, 7))
	var out []byte
	for len(out) != proto.AckLen {
		out = b.Tick()
	}
	if out[4] != 0x2f {
		t.Fatalf("spi_connected %#x, want 0x2f (driver 4 failed)", out[4])
	}
	// Once left out, the driver is not talked to, even when it recovers: its block keeps the
	// failed transfer's error 15 from autodetection.
	_ = b.SetSPIFault(4, false)
	b.HandlePayload(idleCommand(t, 7, 0))
	if blk := decodeSensor(t, b.Tick()).Drivers[4]; blk != (proto.DriverSensor{Status: 0x000f}) {
		t.Fatalf("unconnected driver block %+v", blk)
	}
}

func TestInjectedDriverError(t *testing.T) {
	b, p := activeBoard(t, Config{AlignmentTicks: 10}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 0, 0, false)
	holdCommand(t, b, &c, 11)
	if err := b.SetDriverError(3, proto.ErrCriticalTemp); err != nil {
		t.Fatal(err)
	}
	st := decodeSensor(t, b.Tick()).Drivers[3].Status
	if st.Error() != proto.ErrCriticalTemp || st.MotorEnabled(0) || p.lastDrive[6].Enabled || p.lastDrive[7].Enabled {
		t.Fatalf("status %v, drive %v %v: want error 3 with both motors off", st, p.lastDrive[6].Enabled, p.lastDrive[7].Enabled)
	}
	_ = b.SetDriverError(3, proto.ErrNone)
	for tick := 1; tick <= 11; tick++ {
		c.Index++
		b.HandlePayload(commandPayload(t, &c))
		st = decodeSensor(t, b.Tick()).Drivers[3].Status
		if st.Error() != proto.ErrNone || !st.MotorEnabled(0) || st.MotorReady(0) != (tick == 11) {
			t.Fatalf("tick %d after clearing: status %v", tick, st)
		}
	}
	for _, bad := range []struct {
		d    int
		code proto.ErrorCode
	}{{-1, 1}, {6, 1}, {0, 16}} {
		if err := b.SetDriverError(bad.d, bad.code); err == nil {
			t.Fatalf("SetDriverError(%d, %d) accepted", bad.d, bad.code)
		}
	}
	if err := b.SetSPIFault(6, true); !errors.Is(err, ErrNoSuchDriver) {
		t.Fatalf("SetSPIFault(6) = %v", err)
	}
}

func TestIMUFaults(t *testing.T) {
	b, _ := newBoard(t, Config{IMUStartupTicks: 40}, [proto.NumMotors]float64{})
	b.HandlePayload(initPayload(proto.Version, 7))
	for tick := 1; tick <= 40; tick++ {
		s := decodeSensor(t, b.Tick())
		if s.IMU != (proto.IMU{}) {
			t.Fatalf("tick %d: IMU %+v before it started, want all zero", tick, s.IMU)
		}
	}
	s := decodeSensor(t, b.Tick())
	if math.Abs(s.IMU.Accelerometer[2]-proto.StandardGravity) > 0.01 || s.IMU.Gyroscope[2] == 0 {
		t.Fatalf("started IMU %+v", s.IMU)
	}
	b.SetIMUFrozen(true)
	frozen := decodeSensor(t, b.Tick()).IMU
	for range 5 {
		if got := decodeSensor(t, b.Tick()).IMU; got != frozen {
			t.Fatalf("frozen IMU changed: %+v then %+v", frozen, got)
		}
	}
	b.SetIMUFrozen(false)
	if got := decodeSensor(t, b.Tick()).IMU; got == frozen {
		t.Fatal("IMU still frozen")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	plant, err := NewFirstOrderPlant(FirstOrderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	nan := Config{}
	nan.IndexAngle[3] = math.NaN()
	for name, cfg := range map[string]Config{
		"negative alignment": {AlignmentTicks: -1},
		"negative timeout":   {ControlTimeoutTicks: -5},
		"negative IMU start": {IMUStartupTicks: -1},
		"infinite voltage":   {BusVoltage: math.Inf(1)},
		"NaN index":          nan,
	} {
		if _, err := New(cfg, plant); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("nil plant accepted")
	}
	if _, err := NewFirstOrderPlant(FirstOrderConfig{Inertia: -1}); err == nil {
		t.Error("negative inertia accepted")
	}
}

func TestZeroAllocations(t *testing.T) {
	b, _ := activeBoard(t, Config{Version: 3}, [proto.NumMotors]float64{})
	c := enableCommand(7, 1, 1, 0.02, true)
	cmd := commandPayload(t, &c)
	for _, version := range []uint16{proto.Version, 3} {
		b.cfg.Version = version
		allocs := testing.AllocsPerRun(1000, func() {
			cmd[proto.CommandLen-2]++
			b.HandlePayload(cmd)
			b.Tick()
		})
		if allocs != 0 {
			t.Fatalf("v%d: %v allocations per HandlePayload+Tick", version, allocs)
		}
	}
}

// FuzzHandlePayload feeds arbitrary payloads to boards in every state: nothing may panic, and a
// reply, when there is one, is always a well-formed ack.
func FuzzHandlePayload(f *testing.F) {
	f.Add(initPayload(4, 7), uint8(0))
	f.Add(initPayload(5, 7), uint8(3))
	f.Add(make([]byte, proto.CommandLen), uint8(2))
	f.Add([]byte{}, uint8(1))
	f.Add(make([]byte, proto.SensorLen), uint8(4))
	f.Fuzz(func(t *testing.T, p []byte, setup uint8) {
		b, _ := newBoard(t, Config{AutodetectTicks: 2, Version: uint16(setup>>4) + 3}, [proto.NumMotors]float64{})
		b.HandlePayload(initPayload(b.cfg.Version, 7))
		for range int(setup & 7) {
			b.Tick()
		}
		if setup&8 != 0 {
			b.SetLinkUp(false)
		}
		if reply := b.HandlePayload(p); reply != nil {
			var a proto.Ack
			if err := a.Unmarshal(reply); err != nil {
				t.Fatalf("malformed reply % x: %v", reply, err)
			}
		}
		for range 3 {
			b.Tick()
		}
	})
}
