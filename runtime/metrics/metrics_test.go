package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var testOptions = Options{
	Modes:        []string{"stand", "run", "damp", "stop"},
	FaultReasons: []string{"joint_limit", "joint_velocity", "link_timeout"},
}

var quiet = slog.New(slog.DiscardHandler)

// scrape fetches and parses the exposition at url.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %s, content type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// series finds the metric of family name whose labels include want.
func series(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := families[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v", name, want)
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

func serve(t *testing.T, m *Metrics) (url string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln, quiet) }()
	return "http://" + ln.Addr().String() + Path, func() error { cancel(); return <-done }
}

func TestScrape(t *testing.T) {
	m, err := New(testOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, 1200 * time.Microsecond} {
		m.ObserveLoopPeriod(d)
	}
	m.IncOverruns()
	m.IncOverruns()
	m.AddSensorPacketsLost(3)
	m.AddCommandPacketsLost(5)
	m.ObserveLinkRoundTrip(180 * time.Microsecond)
	m.ObserveLinkRoundTrip(220 * time.Microsecond)
	m.ObserveInference(40 * time.Microsecond)
	m.IncFault(2)
	m.IncFault(99)
	m.SetMode(3)
	m.SetMode(1)
	m.SetSkill(7)

	url, stop := serve(t, m)
	f := scrape(t, url)
	const p = Namespace + "_" + Subsystem + "_"

	loop := series(t, f, p+"loop_period_seconds", nil).GetHistogram()
	if loop.GetSampleCount() != 4 || !near(loop.GetSampleSum(), 0.0042) {
		t.Errorf("loop period count %d sum %v", loop.GetSampleCount(), loop.GetSampleSum())
	}
	for _, b := range loop.Bucket {
		want := map[float64]uint64{0.000999: 0, 0.001001: 3, 0.0011: 3, 0.0015: 4}
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("loop period bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	rt := series(t, f, p+"link_round_trip_seconds", nil).GetHistogram()
	if rt.GetSampleCount() != 2 || !near(rt.GetSampleSum(), 400e-6) {
		t.Errorf("round trip count %d sum %v", rt.GetSampleCount(), rt.GetSampleSum())
	}
	if inf := series(t, f, p+"policy_inference_seconds", nil).GetHistogram(); inf.GetSampleCount() != 1 || !near(inf.GetSampleSum(), 40e-6) {
		t.Errorf("inference count %d sum %v", inf.GetSampleCount(), inf.GetSampleSum())
	}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"loop_overruns_total", nil, 2},
		{"link_lost_packets_total", map[string]string{"direction": "sensor"}, 3},
		{"link_lost_packets_total", map[string]string{"direction": "command"}, 5},
		{"faults_total", map[string]string{"reason": "link_timeout"}, 1},
		{"faults_total", map[string]string{"reason": "joint_limit"}, 0},
		{"faults_total", map[string]string{"reason": UnknownLabel}, 1},
	}
	for _, c := range counters {
		if got := series(t, f, p+c.name, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, mode := range []string{"stand", "run", "damp", "stop", UnknownLabel} {
		want := 0.0
		if mode == "run" {
			want = 1
		}
		if got := series(t, f, p+"mode", map[string]string{"mode": mode}).GetGauge().GetValue(); got != want {
			t.Errorf("mode{mode=%q} = %v, want %v", mode, got, want)
		}
	}
	if got := series(t, f, p+"skill", nil).GetGauge().GetValue(); got != 7 {
		t.Errorf("skill = %v", got)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if f[name] == nil {
			t.Errorf("no %s", name)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("endpoint still answers after shutdown")
	}
}

func TestStartState(t *testing.T) {
	m, err := New(testOptions)
	if err != nil {
		t.Fatal(err)
	}
	url, stop := serve(t, m)
	defer stop()
	f := scrape(t, url)
	const p = Namespace + "_" + Subsystem + "_"
	if got := series(t, f, p+"mode", map[string]string{"mode": UnknownLabel}).GetGauge().GetValue(); got != 1 {
		t.Errorf("mode before any SetMode: unknown = %v, want 1", got)
	}
	if got := series(t, f, p+"skill", nil).GetGauge().GetValue(); got != -1 {
		t.Errorf("skill before any SetSkill = %v, want -1", got)
	}
	m.SetMode(-4)
	m.SetMode(len(testOptions.Modes))
	if got := series(t, scrape(t, url), p+"mode", map[string]string{"mode": UnknownLabel}).GetGauge().GetValue(); got != 1 {
		t.Errorf("out-of-range mode: unknown = %v, want 1", got)
	}
}

func TestServeErrors(t *testing.T) {
	m, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := m.Serve(context.Background(), ln, quiet); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serving on a closed listener: %v", err)
	}
	if err := m.ListenAndServe(context.Background(), "127.0.0.1:99999", quiet); err == nil {
		t.Error("bad address accepted")
	}
	// A second server on a port in use fails at once instead of serving nothing.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := m.ListenAndServe(context.Background(), busy.Addr().String(), quiet); err == nil {
		t.Error("port in use accepted")
	}
}

func TestNewRejectsBadLabels(t *testing.T) {
	for _, opts := range []Options{
		{Modes: []string{"run", "run"}},
		{Modes: []string{""}},
		{FaultReasons: []string{UnknownLabel}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) accepted", opts)
		}
	}
}

// TestHandlerOnly serves the handler without Serve, as a caller with its own mux would.
func TestHandlerOnly(t *testing.T) {
	m, err := New(testOptions)
	if err != nil {
		t.Fatal(err)
	}
	srv := http.Server{Handler: m.Handler(nil), ReadHeaderTimeout: time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "dualforce_runtime_loop_overruns_total 0") {
		t.Errorf("body lacks the overruns series:\n%.500s", body)
	}
}
