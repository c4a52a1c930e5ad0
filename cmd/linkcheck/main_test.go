package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/link"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "CAP_NET_RAW"},
		{[]string{"--transport", "tcp"}, 2, "bad arguments"},
		{[]string{"--duration", "-1s"}, 2, "bad arguments"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"--transport", "ethernet", "--rt-priority", "0"}, 1, "needs --iface"},
		{[]string{"--transport", "ethernet", "--iface", "nosuch0", "--rt-priority", "0"}, 1, "no network interface named"},
	} {
		var out, errs bytes.Buffer
		if code := run(tc.args, &out, &errs); code != tc.code || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.want)
		}
	}
}

// serveBoard runs an emulated board (motors align in 50 ms) on conn until the test ends.
func serveBoard(t *testing.T, conn link.Conn, opts server.Options) {
	t.Helper()
	b := boardtest.FirstOrder(t, board.Config{AlignmentTicks: 50})
	srv := server.New(b, conn, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// TestAgainstEmulatedBoard runs linkcheck for 1.5 s against an emulated board on a UDP tunnel,
// both real-time as they run by default (else a busy machine stalls them past the board's 20 ms
// watchdog).
func TestAgainstEmulatedBoard(t *testing.T) {
	u, err := link.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	serveBoard(t, u, server.Options{Priority: 40})
	var out, errs bytes.Buffer
	code := run([]string{"--transport", "udp", "--addr", u.Addr().String(), "--duration", "1500ms"}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, want := range []string{"command loss 0", "driver 5: motor 10 ready; motor 11 ready; error: none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
