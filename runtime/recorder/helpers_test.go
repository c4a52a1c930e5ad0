package recorder

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/dualforce/dualforce/hw/proto"
)

// start is the log time of tick 0 in the tests: 2025-01-02 03:04:05 UTC.
var start = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()

// policyEvery is the tests' policy period in ticks (50 Hz at 1 kHz).
const policyEvery = 20

// tickGen makes deterministic ticks; it reuses its buffers like the runtime does.
type tickGen struct {
	t       Tick
	sensor  [proto.SensorLen]byte
	command [proto.CommandLen]byte
	obs     [48]float32
	action  [ActionLen]float32
	events  []byte
}

// make returns tick i: payloads always, a policy step every policyEvery ticks (with a
// non-finite observation value and an event of each kind every fifth step).
func (g *tickGen) make(i uint64) *Tick {
	for k := range g.sensor {
		g.sensor[k] = byte(i*7 + uint64(k))
	}
	for k := range g.command {
		g.command[k] = byte(i*13 + uint64(k))
	}
	g.t = Tick{Index: i, UnixNano: start + int64(i)*int64(time.Millisecond), Sensor: g.sensor[:], Command: g.command[:]}
	if i%policyEvery != 0 {
		return &g.t
	}
	for k := range g.obs {
		g.obs[k] = float32(i)*0.001 + float32(k)/3
	}
	g.obs[int(i/policyEvery)%len(g.obs)] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30}[int(i/policyEvery)%4]
	for k := range g.action {
		g.action[k] = float32(math.Sin(float64(i) + float64(k)))
	}
	g.t.Observation, g.t.Action = g.obs[:], g.action[:]
	if i%(5*policyEvery) == 0 {
		g.events = fmt.Appendf(g.events[:0], "{\"kind\":\"skill_switch\",\"to\":%d}\nskill switch at tick %d: \"quoted\" \\ text\n", i/100, i)
		g.t.Events = g.events
	}
	return &g.t
}

// cloneTick deep-copies t (a reader's tick is only valid until its next call).
func cloneTick(t *Tick) Tick {
	c := *t
	c.Sensor, c.Command = slices.Clone(t.Sensor), slices.Clone(t.Command)
	c.Observation, c.Action, c.Events = slices.Clone(t.Observation), slices.Clone(t.Action), slices.Clone(t.Events)
	return c
}

// sameTick compares ticks, NaN equal to NaN, nil equal to empty.
func sameTick(a, b *Tick) bool {
	sameFloats := func(x, y []float32) bool {
		return slices.EqualFunc(x, y, func(p, q float32) bool { return math.Float32bits(p) == math.Float32bits(q) || (p != p && q != q) })
	}
	return a.Index == b.Index && a.UnixNano == b.UnixNano &&
		string(a.Sensor) == string(b.Sensor) && string(a.Command) == string(b.Command) &&
		sameFloats(a.Observation, b.Observation) && sameFloats(a.Action, b.Action) && string(a.Events) == string(b.Events)
}

// readAll reads every tick of the recording at path; err is the reader's final error (io.EOF
// for a complete recording).
func readAll(t testing.TB, path string) (ticks []Tick, meta map[string]map[string]string, err error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		tick, err := r.Next()
		if err != nil {
			return ticks, r.Metadata(), err
		}
		ticks = append(ticks, cloneTick(tick))
	}
}

// mustReadAll is readAll of a recording that must be complete.
func mustReadAll(t testing.TB, path string) ([]Tick, map[string]map[string]string) {
	t.Helper()
	ticks, meta, err := readAll(t, path)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("%s: %v after %d ticks, want io.EOF", path, err, len(ticks))
	}
	return ticks, meta
}

// mcapInfo checks path with the mcap library's own indexed reader, the way Foxglove opens a
// file: through its summary section.
func mcapInfo(t testing.TB, path string) *mcap.Info {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := mcap.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		t.Fatalf("%s: summary: %v", path, err)
	}
	if len(info.ChunkIndexes) == 0 || info.Statistics == nil || !info.CanReadMessagesUsingIndex() {
		t.Fatalf("%s: summary without chunk indexes or statistics", path)
	}
	return info
}

func newTestRecorder(t testing.TB, opts Options) *Recorder {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recordRange records ticks [from, to), failing on any refusal.
func recordRange(t testing.TB, r *Recorder, g *tickGen, from, to uint64) {
	t.Helper()
	for i := from; i < to; i++ {
		for {
			err := r.Record(g.make(i))
			if err == nil {
				break
			}
			if !errors.Is(err, ErrRingFull) {
				t.Fatalf("tick %d: %v", i, err)
			}
			time.Sleep(time.Millisecond) // the test outpaces the writer: let it drain
		}
	}
}
