//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/clock"
	"github.com/dualforce/dualforce/hw/clock/clocktest"
	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/hw/proto"
)

// TestMain lets clocktest.KeepAwake start this test binary as its CPU spinner.
func TestMain(m *testing.M) { clocktest.Main(m) }

// TestListenFollowsConsecutiveSessions runs `linkcheck --listen` on a raw socket at one end of a
// veth pair while three host sessions, one after the other, control the emulated board served in
// real time at the other end (ids 1, 2, and 2 again: only the acks mark that change): the
// listener follows them all and counts no packet as lost, neither across a change (where the
// board restarts sensor_index) nor anywhere else.
func TestListenFollowsConsecutiveSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("5 s on a veth pair")
	}
	clocktest.KeepAwake(t) // first, before the test raises its threads
	clocktest.Attempts(t, 3, listenFollowsConsecutiveSessions)
}

// listenFollowsConsecutiveSessions is one run of TestListenFollowsConsecutiveSessions. A shared
// virtual machine now and then stops the sessions' loop past the board's 20 ms watchdog, which
// then rightly stops taking its commands: such a run says nothing about the listener.
func listenFollowsConsecutiveSessions(t *testing.T, stalled func(format string, args ...any)) {
	hostNS, boardNS := linktest.VethPair(t)
	// The board's firmware owns its CPU and a robot's programs run real-time: so does this test,
	// or a busy machine stalls the sessions past the board's 20 ms watchdog.
	if restore, err := clock.RealtimeProcess(20); err != nil {
		t.Logf("running without real-time priority: %v", err)
	} else {
		t.Cleanup(func() {
			if err := restore(); err != nil {
				t.Error(err)
			}
		})
	}
	boardConn := boardNS.OpenEthernet(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	serveBoard(t, boardConn, server.Options{MAC: boardConn.LocalMAC(), Priority: 40, Logger: quiet})

	var out, errs bytes.Buffer
	listened := make(chan int, 1)
	go func() {
		code := 1
		if err := hostNS.Do(func() error {
			code = run([]string{"--transport", "ethernet", "--iface", hostNS.Interface(), "--listen",
				"--duration", "5s", "--rt-priority", "0"}, &out, &errs)
			return nil
		}); err != nil {
			errs.WriteString(err.Error())
		}
		listened <- code
	}()
	// A failing test still waits for linkcheck, before the namespaces go.
	var code int
	waited := false
	t.Cleanup(func() {
		if !waited {
			<-listened
		}
	})

	// The sessions' thread wakes ahead of the rest of the process, as a robot's control loop does.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if restore, err := clock.Realtime(30); err == nil {
		defer func() {
			if err := restore(); err != nil {
				t.Error(err)
			}
		}()
	}
	hostConn := hostNS.OpenEthernet(t)
	var cmd proto.Command
	for d := range cmd.Drivers {
		cmd.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
	}
	var in proto.Sensor
	for _, id := range []uint16{1, 2, 2} {
		s := host.New(hostConn, host.Config{Interface: hostNS.Interface(), MAC: hostConn.LocalMAC(), SessionID: id, Logger: quiet})
		if _, err := s.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range 700 {
			if err := s.Send(&cmd); err != nil {
				t.Fatal(err)
			}
			if err := s.Receive(&in); errors.Is(err, host.ErrCommandsIgnored) {
				stalled("session %d cycle %d: %v: a command gap past the watchdog, in a loop that sends every cycle, is the host stalling it", id, i, err)
			} else if err != nil {
				t.Fatalf("session %d cycle %d: %v", id, i, err)
			}
		}
		// Silent now: the board's watchdog puts it in ERROR, where it goes on sending.
		for range 100 {
			if err := s.Receive(&in); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, waited = <-listened, true
	if code != 0 {
		t.Fatalf("linkcheck --listen: exit %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := regexp.MustCompile(`session\s+(\d+)\s+sent\s+0\s+received\s+(\d+)\s+command loss (\d+)\s+sensor loss (\d+)\s+foreign (\d+)`).
		FindStringSubmatch(lines[len(lines)-1])
	if last == nil {
		t.Fatalf("no statistics line at the end:\n%s", out.String())
	}
	received, _ := strconv.Atoi(last[2])
	if last[1] != "2" || received < 2500 || last[3] != "0" || last[4] != "0" || last[5] != "0" {
		t.Fatalf("final line %q: want session 2, over 2500 packets received, no loss and no foreign packets\n%s\n%s",
			lines[len(lines)-1], out.String(), errs.String())
	}
	// 0 (autodetection after boot) -> 1 -> 2 -> 2, unless linkcheck opened its socket late.
	if n := strings.Count(errs.String(), "listener follows a new session"); n < 2 || strings.Contains(errs.String(), "session lost") {
		t.Fatalf("the listener followed %d new sessions, or lost one:\n%s", n, errs.String())
	}
	t.Logf("linkcheck --listen, last line: %s", lines[len(lines)-1])
}
