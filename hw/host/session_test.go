package host_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// TestLockstepSession drives the emulated board in lockstep over a pipe: one tick per command,
// so every sensor packet answers the command just sent.
func TestLockstepSession(t *testing.T) {
	r := startBoard(t, board.Config{AlignmentTicks: 50}, server.Options{Lockstep: true})
	log, _ := newLogger()
	s := host.New(r.host, host.Config{Interface: "pipe", SessionID: 0x1234, Logger: log})
	ack, err := s.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ack.SessionID != 0x1234 || ack.SPIConnected != 0x3f || s.SPIConnected() != 0x3f {
		t.Fatalf("ack %+v", ack)
	}
	cmd := enableAll(1.5, 0.02, 1.0)
	var in proto.Sensor
	const cycles = 1000
	for i := range cycles {
		if err := s.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if cmd.Index != uint16(i) || cmd.SessionID != 0x1234 {
			t.Fatalf("command stamped %d/%d, want index %d", cmd.SessionID, cmd.Index, i)
		}
		if err := s.Receive(&in); err != nil {
			t.Fatal(err)
		}
		if in.LastCmdIndex != cmd.Index || in.SensorIndex != uint16(i+1) {
			t.Fatalf("cycle %d: last_cmd_index %d sensor_index %d", i, in.LastCmdIndex, in.SensorIndex)
		}
	}
	for _, d := range s.Drivers(&in) {
		if !d.Motors[0].Ready || !d.Motors[1].Ready || d.Error != proto.ErrNone {
			t.Fatalf("after %d cycles: %v", cycles, d)
		}
	}
	if err := s.CheckDrivers(&in); err != nil {
		t.Fatal(err)
	}
	for m := range proto.NumMotors {
		if pos, _, _ := in.Motor(m); math.Abs(pos-1) > 1e-3 {
			t.Fatalf("motor %d at %v, want the commanded 1 rad", m, pos)
		}
	}
	st := s.Stats()
	if st.CommandsSent != cycles || st.SensorsReceived != cycles || st.CommandLoss != 0 || st.SensorLoss != 0 ||
		st.ForeignSensors != 0 || st.LatencySamples != cycles || st.LatencyP50 <= 0 || st.LatencyP99 < st.LatencyP50 {
		t.Fatalf("stats %+v", st)
	}
	if allocs := testing.AllocsPerRun(200, func() {
		if err := s.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := s.Receive(&in); err != nil {
			t.Fatal(err)
		}
		_ = s.Stats()
	}); allocs != 0 {
		t.Fatalf("%v allocations per Send+Receive+Stats", allocs)
	}
}

func TestConnectErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		board *board.Config // nil: nothing on the other end
		check func(t *testing.T, err error)
	}{
		{"no answer", nil, func(t *testing.T, err error) {
			if !errors.Is(err, host.ErrNoAnswer) {
				t.Fatalf("error %v, want ErrNoAnswer", err)
			}
			for _, hint := range []string{"veth-test0", "cable", "powered", "power it on before", "protocol v4"} {
				if !strings.Contains(err.Error(), hint) {
					t.Errorf("error %q does not mention %q", err, hint)
				}
			}
		}},
		{"version mismatch", &board.Config{Version: 5}, func(t *testing.T, err error) {
			var vm *proto.VersionMismatchError
			if !errors.As(err, &vm) || vm.Board != 5 || vm.Host != 4 {
				t.Fatalf("error %v, want a version mismatch naming v5 and v4", err)
			}
			if !strings.Contains(err.Error(), "protocol version mismatch (board v5, host v4)") {
				t.Fatalf("error text %q", err)
			}
		}},
		{"protocol v3 board", &board.Config{Version: 3}, func(t *testing.T, err error) {
			if !errors.Is(err, proto.ErrProtocolV3) {
				t.Fatalf("error %v, want ErrProtocolV3", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var conn link.Conn
				if tc.board == nil {
					h, b := link.Pipe()
					defer h.Close()
					defer b.Close()
					conn = h
				} else {
					conn = startBoard(t, *tc.board, server.Options{Lockstep: true}).host
				}
				log, _ := newLogger()
				s := host.New(conn, host.Config{Interface: "veth-test0", Logger: log})
				start := time.Now()
				_, err := s.Connect(context.Background())
				tc.check(t, err)
				if tc.board == nil && time.Since(start) != 2500*time.Millisecond {
					t.Fatalf("gave up after %v, want 2.5 s", time.Since(start))
				}
				if err := s.Send(&proto.Command{}); !errors.Is(err, host.ErrNotConnected) {
					t.Fatalf("Send after a failed Connect: %v", err)
				}
			})
		})
	}
}

// TestAnotherSessionIsConnecting: a host that died right after its init leaves the board
// acknowledging it; a second host is told so, and takes over once the board's 1 s ack timeout
// has put it in ERROR.
func TestAnotherSessionIsConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startBoard(t, board.Config{}, server.Options{Lockstep: true})
		log, _ := newLogger()
		dead := host.New(r.host, host.Config{SessionID: 100, Logger: log})
		if _, err := dead.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		impatient := host.New(r.host, host.Config{SessionID: 200, InitTimeout: 300 * time.Millisecond, Logger: log})
		_, err := impatient.Connect(context.Background())
		var other *host.OtherSessionError
		if !errors.As(err, &other) || !other.Acked || other.Theirs != 100 || other.Ours != 200 {
			t.Fatalf("error %v, want another session (100) acknowledged", err)
		}
		patient := host.New(r.host, host.Config{SessionID: 300, Logger: log})
		start := time.Now()
		ack, err := patient.Connect(context.Background())
		if err != nil || ack.SessionID != 300 {
			t.Fatalf("ack %+v, %v", ack, err)
		}
		// The lockstep board ticks once per init: 1 ms each.
		if took := time.Since(start); took < 700*time.Millisecond || took > 900*time.Millisecond {
			t.Fatalf("took over after %v, want the rest of the 1 s ack timeout plus autodetection", took)
		}
	})
}

func TestSensorTimeoutAndForeignPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startBoard(t, board.Config{}, server.Options{Lockstep: true})
		log, _ := newLogger()
		s := host.New(r.host, host.Config{SessionID: 5, Logger: log})
		var in proto.Sensor
		if err := s.Receive(&in); !errors.Is(err, host.ErrNotConnected) {
			t.Fatalf("Receive before Connect: %v", err)
		}
		if _, err := s.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		cmd := proto.Command{}
		if err := s.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := s.Receive(&in); err != nil {
			t.Fatal(err)
		}
		// Another board's (or session's) sensor packets arrive: counted and dropped.
		foreign := proto.Sensor{SessionID: 6}
		var payload [proto.SensorLen]byte
		var frame [proto.MaxFrameLen]byte
		if err := foreign.Marshal(payload[:]); err != nil {
			t.Fatal(err)
		}
		n, _ := proto.PutFrame(frame[:], server.DefaultMAC, payload[:])
		for range 3 {
			if err := r.boardEnd.WriteFrame(frame[:n]); err != nil {
				t.Fatal(err)
			}
		}
		// The lockstep board does not tick without commands: the sensor packets stop.
		start := time.Now()
		err := s.Receive(&in)
		if !errors.Is(err, host.ErrSensorTimeout) {
			t.Fatalf("Receive: %v, want ErrSensorTimeout", err)
		}
		if waited := time.Since(start); waited < 50*time.Millisecond || waited > 61*time.Millisecond {
			t.Fatalf("timed out after %v, want 50..60 ms", waited)
		}
		if st := s.Stats(); st.ForeignSensors != 3 || st.SensorsReceived != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestSaturationIsLoggedAndNaNRefused(t *testing.T) {
	r := startBoard(t, board.Config{}, server.Options{Lockstep: true})
	log, logs := newLogger()
	s := host.New(r.host, host.Config{Logger: log})
	if _, err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	var in proto.Sensor
	cycle := func(c *proto.Command) {
		t.Helper()
		if err := s.Send(c); err != nil {
			t.Fatal(err)
		}
		if err := s.Receive(&in); err != nil {
			t.Fatal(err)
		}
	}
	stiff := enableAll(10, 0, 0) // Kp 10 A/rad: far above the wire's 2.6
	for range 3 {
		cycle(&stiff)
	}
	if got := strings.Count(logs.String(), "saturated"); got != 1 {
		t.Fatalf("%d saturation warnings for 3 saturated commands, want 1 (on change): %s", got, logs)
	}
	if !strings.Contains(logs.String(), "fields=kp") || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("warning does not name kp: %s", logs)
	}
	soft := enableAll(1, 0, 0)
	cycle(&soft)
	if !strings.Contains(logs.String(), "no longer saturated") {
		t.Fatalf("no notice when saturation ended: %s", logs)
	}
	if st := s.Stats(); st.SaturatedCommands != 3 {
		t.Fatalf("saturated commands %d, want 3", st.SaturatedCommands)
	}
	bad := enableAll(1, 0, math.NaN())
	if err := s.Send(&bad); !errors.Is(err, proto.ErrNotFinite) {
		t.Fatalf("NaN command: %v", err)
	}
	cycle(&soft)
	if st := s.Stats(); st.CommandLoss != 0 || in.LastCmdIndex != 4 {
		t.Fatalf("the refused command used an index: loss %d, last %d", st.CommandLoss, in.LastCmdIndex)
	}
}

func TestDriverFaultsAreNamed(t *testing.T) {
	r := startBoard(t, board.Config{AlignmentTicks: 5}, server.Options{Lockstep: true})
	log, _ := newLogger()
	s := host.New(r.host, host.Config{Logger: log})
	if _, err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Do(context.Background(), func(b *board.Board) {
		_ = b.SetSPIFault(2, true)
		_ = b.SetDriverError(4, proto.ErrCriticalTemp)
	}); err != nil {
		t.Fatal(err)
	}
	cmd := enableAll(0, 0, 0)
	var in proto.Sensor
	for range 10 {
		if err := s.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := s.Receive(&in); err != nil {
			t.Fatal(err)
		}
	}
	err := s.CheckDrivers(&in)
	var de *host.DriverError
	if !errors.As(err, &de) || de.Status.Driver != 2 || de.Status.Error != proto.ErrSPICRC {
		t.Fatalf("CheckDrivers: %v, want driver 2's SPI CRC first", err)
	}
	for _, want := range []string{"driver 2 (motors 4 and 5) reports error 15", "ribbon cable",
		"driver 4 (motors 8 and 9) reports error 3, critical temperature"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	drivers := s.Drivers(&in)
	if got := drivers[0].String(); got != "driver 0: motor 0 ready; motor 1 ready; error: none" {
		t.Errorf("driver 0: %q", got)
	}
	if got := drivers[2].String(); got != "driver 2: system disabled; motor 4 disabled; motor 5 disabled; "+
		"error: SPI CRC (board could not talk to this driver)" {
		t.Errorf("driver 2: %q", got)
	}
}

func TestDecodeDriver(t *testing.T) {
	for _, tc := range []struct {
		status    proto.Status
		connected bool
		want      string
	}{
		{0, false, "driver 3: not connected (did not answer SPI autodetection)"},
		{proto.StatusSystemEnabled, true, "driver 3: motor 6 disabled; motor 7 disabled; error: none"},
		{proto.StatusSystemEnabled | proto.StatusMotor1Enabled | proto.StatusMotor2Enabled | proto.StatusMotor2Ready,
			true, "driver 3: motor 6 aligning; motor 7 ready; error: none"},
		{proto.StatusSystemEnabled | proto.StatusMotor1Enabled | proto.StatusMotor1Ready | proto.StatusIndex1Seen,
			true, "driver 3: motor 6 ready, index seen; motor 7 disabled; error: none"},
		{proto.Status(0).WithError(proto.ErrSPIRecvTimeout) | proto.StatusSystemEnabled, true,
			"driver 3: motor 6 disabled; motor 7 disabled; error: SPI receive timeout"},
		{proto.Status(0).WithError(11), true, "driver 3: system disabled; motor 6 disabled; motor 7 disabled; error: unassigned code 11"},
	} {
		if got := host.DecodeDriver(3, tc.status, tc.connected).String(); got != tc.want {
			t.Errorf("status %#04x: %q, want %q", uint16(tc.status), got, tc.want)
		}
	}
}

// TestCommandsIgnoredAfterBoardError: the board's watchdog fires (here: 21 ticks driven by
// another session's commands, which do not feed it), and the host notices that its own commands
// are no longer acknowledged.
func TestCommandsIgnoredAfterBoardError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startBoard(t, board.Config{}, server.Options{Lockstep: true})
		log, _ := newLogger()
		s := host.New(r.host, host.Config{SessionID: 1, Logger: log})
		if _, err := s.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		cmd := enableAll(0, 0, 0)
		var in proto.Sensor
		cycle := func() error {
			time.Sleep(time.Millisecond)
			if err := s.Send(&cmd); err != nil {
				t.Fatal(err)
			}
			return s.Receive(&in)
		}
		for range 10 {
			if err := cycle(); err != nil {
				t.Fatal(err)
			}
		}
		rogue := proto.Command{SessionID: 2}
		var payload [proto.CommandLen]byte
		var frame [proto.MaxFrameLen]byte
		for range 21 {
			if _, err := rogue.Marshal(payload[:]); err != nil {
				t.Fatal(err)
			}
			n, _ := proto.PutFrame(frame[:], host.DefaultMAC, payload[:])
			if err := r.host.WriteFrame(frame[:n]); err != nil {
				t.Fatal(err)
			}
			if err := s.Receive(&in); err != nil { // the board's answer to each rogue tick
				t.Fatal(err)
			}
		}
		var err error
		cycles := 0
		for ; err == nil && cycles < 100; cycles++ {
			err = cycle()
		}
		if !errors.Is(err, host.ErrCommandsIgnored) {
			t.Fatalf("after %d cycles: %v, want ErrCommandsIgnored", cycles, err)
		}
		if cycles < 50 || cycles > 52 {
			t.Fatalf("noticed after %d ms, want just over the 50 ms sensor timeout", cycles)
		}
		if d := s.Drivers(&in)[0]; d.Motors[0].Enabled {
			t.Fatalf("%v: the board in ERROR should have disabled the motors", d)
		}
	})
}
