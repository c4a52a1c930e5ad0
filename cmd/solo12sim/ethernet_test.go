//go:build linux

package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/host"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/link/linktest"
	"github.com/dualforce/dualforce/hw/proto"
)

// --transport ethernet serves raw master-board frames on an interface: here one end of a veth
// pair, with a host session on raw sockets at the other end.
func TestServesOverEthernet(t *testing.T) {
	hostNS, simNS := linktest.VethPair(t)
	logs := newLogLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// The simulator's socket is opened inside run, on this namespace's thread.
		done <- simNS.Do(func() error {
			return run(ctx, []string{"--transport", "ethernet", "--iface", simNS.Interface(),
				"--perception-addr", "", "--stats", "0"}, logs)
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if addr := waitServing(t, logs.lines); addr != simNS.Interface() {
		t.Fatalf("serving on %q", addr)
	}
	var conn *link.Ethernet
	if err := hostNS.Do(func() (err error) {
		conn, err = link.OpenEthernet(hostNS.Interface())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := host.New(conn, host.Config{Interface: hostNS.Interface(), MAC: conn.LocalMAC(), SensorTimeout: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if _, err := h.Connect(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	var cmd proto.Command
	var in proto.Sensor
	for i := range 500 {
		if err := h.Send(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := h.Receive(&in); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
	}
	if st := h.Stats(); st.CommandLoss != 0 || st.SensorLoss != 0 {
		t.Fatalf("lost packets: %+v", st)
	}
	if !strings.Contains(logs.String(), "transport=ethernet") {
		t.Fatal(logs.String())
	}
}
