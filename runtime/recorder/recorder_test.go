package recorder

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"
)

func TestRoundTrip(t *testing.T) {
	const n = 1000
	for _, compression := range []mcap.CompressionFormat{mcap.CompressionZSTD, mcap.CompressionLZ4, CompressionNone} {
		t.Run(string(compression), func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRecorder(t, Options{Dir: dir, Compression: compression, RingTicks: n,
				Metadata: map[string]string{"robot_id": "solo-7", "layout": "locomotion48"}})
			var g tickGen
			recordRange(t, r, &g, 0, n)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			st := r.Stats()
			if st != (Stats{Recorded: n, Written: n, Files: 1}) {
				t.Fatalf("stats %+v", st)
			}
			files, err := Recordings(dir, "")
			if err != nil || len(files) != 1 {
				t.Fatalf("recordings %v, %v", files, err)
			}
			ticks, meta := mustReadAll(t, files[0])
			if len(ticks) != n {
				t.Fatalf("read %d ticks, wrote %d", len(ticks), n)
			}
			var want tickGen
			for i := range ticks {
				if w := want.make(uint64(i)); !sameTick(&ticks[i], w) {
					t.Fatalf("tick %d differs:\n got %+v\nwant %+v", i, ticks[i], *w)
				}
			}
			if m := meta[MetadataStart]; m["robot_id"] != "solo-7" || m["layout"] != "locomotion48" || m["format"] != FormatVersion || m["first_tick"] != "0" {
				t.Errorf("start metadata %v", m)
			}
			if m := meta[MetadataSummary]; m["ticks"] != "1000" || m["dropped"] != "0" {
				t.Errorf("summary metadata %v", m)
			}

			info := mcapInfo(t, files[0])
			policy := uint64(n / policyEvery)
			wantCounts := map[string]uint64{TopicSensor: n, TopicCommand: n, TopicObservation: policy, TopicAction: policy, TopicEvents: 2 * n / (5 * policyEvery)}
			for id, count := range info.Statistics.ChannelMessageCounts {
				topic := info.Channels[id].Topic
				if wantCounts[topic] != count {
					t.Errorf("%s: %d messages, want %d", topic, count, wantCounts[topic])
				}
			}
			if got, want := info.Statistics.MessageStartTime, uint64(start); got != want {
				t.Errorf("message start time %d, want %d", got, want)
			}
		})
	}
}

// TestTickIndexWrap records across the 32-bit wrap of the MCAP sequence number.
func TestTickIndexWrap(t *testing.T) {
	dir := t.TempDir()
	r := newTestRecorder(t, Options{Dir: dir})
	var g tickGen
	const from = 1<<33 - 50
	recordRange(t, r, &g, from, from+100)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := Recordings(dir, "")
	ticks, _ := mustReadAll(t, files[0])
	for i, tick := range ticks {
		if tick.Index != from+uint64(i) {
			t.Fatalf("tick %d has index %d, want %d", i, tick.Index, from+uint64(i))
		}
	}
}

// checkContiguous reads every file, checks each is complete, and returns all ticks in order.
func checkContiguous(t *testing.T, files []string) []Tick {
	t.Helper()
	var all []Tick
	for _, f := range files {
		ticks, meta := mustReadAll(t, f)
		mcapInfo(t, f)
		if len(ticks) == 0 {
			t.Fatalf("%s is empty", f)
		}
		if meta[MetadataSummary]["ticks"] != strconv.Itoa(len(ticks)) {
			t.Errorf("%s: summary says %s ticks, read %d", f, meta[MetadataSummary]["ticks"], len(ticks))
		}
		if len(all) > 0 && ticks[0].Index != all[len(all)-1].Index+1 {
			t.Fatalf("%s starts at tick %d after tick %d", f, ticks[0].Index, all[len(all)-1].Index)
		}
		all = append(all, ticks...)
	}
	return all
}

func TestRotation(t *testing.T) {
	const n = 6000
	tests := []struct {
		name      string
		opts      Options
		wantFiles int // kept on disk
		check     func(t *testing.T, ticks []Tick)
	}{
		{
			name:      "size",
			opts:      Options{MaxFileBytes: 64 << 10, ChunkSize: 8 << 10, MaxFiles: 3},
			wantFiles: 3,
		},
		{
			name:      "duration",
			opts:      Options{MaxFileDuration: time.Second, MaxFiles: 100},
			wantFiles: 6, // 6 s of ticks at 1 kHz
			check: func(t *testing.T, ticks []Tick) {
				if len(ticks) != n {
					t.Errorf("kept %d ticks, want all %d", len(ticks), n)
				}
			},
		},
		{
			name:      "one file kept",
			opts:      Options{MaxFileDuration: 500 * time.Millisecond, MaxFiles: 1},
			wantFiles: 1,
			check: func(t *testing.T, ticks []Tick) {
				if len(ticks) != 500 || ticks[0].Index != n-500 {
					t.Errorf("kept ticks %d.. (%d), want the last 500", ticks[0].Index, len(ticks))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.opts.Dir, tc.opts.RingTicks = dir, n
			r := newTestRecorder(t, tc.opts)
			var g tickGen
			recordRange(t, r, &g, 0, n)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			files, err := Recordings(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != tc.wantFiles {
				t.Fatalf("%d files on disk, want %d: %v", len(files), tc.wantFiles, files)
			}
			if parts, _ := filepath.Glob(filepath.Join(dir, "*"+partSuffix)); len(parts) > 0 {
				t.Errorf("unfinished files left: %v", parts)
			}
			ticks := checkContiguous(t, files)
			if last := ticks[len(ticks)-1].Index; last != n-1 {
				t.Errorf("last tick kept %d, want %d", last, n-1)
			}
			if st := r.Stats(); st.Written != n || st.Files < uint64(tc.wantFiles) {
				t.Errorf("stats %+v", st)
			}
			for _, f := range files {
				fi, _ := os.Stat(f)
				if tc.opts.MaxFileBytes > 0 && fi.Size() > tc.opts.MaxFileBytes+2*tc.opts.ChunkSize+16<<10 {
					t.Errorf("%s is %d bytes, limit %d", f, fi.Size(), tc.opts.MaxFileBytes)
				}
			}
			if tc.opts.MaxFileDuration > 0 {
				for _, f := range files {
					ticks, _ := mustReadAll(t, f)
					if span := time.Duration(ticks[len(ticks)-1].UnixNano - ticks[0].UnixNano); span >= tc.opts.MaxFileDuration {
						t.Errorf("%s spans %v, limit %v", f, span, tc.opts.MaxFileDuration)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, ticks)
			}
		})
	}
}

// TestOldPartFilesArePruned: a ".part" of a crashed run counts towards MaxFiles, oldest first.
func TestOldPartFilesArePruned(t *testing.T) {
	dir := t.TempDir()
	crashed := filepath.Join(dir, "flight-20000101T000000.000Z-000001"+partSuffix)
	if err := os.WriteFile(crashed, []byte("left by a crash"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newTestRecorder(t, Options{Dir: dir, MaxFiles: 2, MaxFileDuration: time.Second, RingTicks: 4096})
	var g tickGen
	recordRange(t, r, &g, 0, 1500)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(crashed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("crashed part file still there (%v)", err)
	}
	if files, _ := Recordings(dir, ""); len(files) != 2 {
		t.Errorf("files %v, want 2", files)
	}
}

// blockingSink stands for a disk that stops answering: writes wait until release.
type blockingSink struct {
	w       io.Writer
	blocked chan struct{} // closed when the first write blocks
	release chan struct{}
	once    sync.Once
}

func (s *blockingSink) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.blocked) })
	<-s.release
	return s.w.Write(p)
}

// TestStalledDiskNeverBlocksRecord: while the writer is stuck in a write, Record keeps
// returning at once, drops what does not fit and counts it; everything queued is written
// once the disk answers again.
func TestStalledDiskNeverBlocksRecord(t *testing.T) {
	dir := t.TempDir()
	sink := &blockingSink{blocked: make(chan struct{}), release: make(chan struct{})}
	r, err := newRecorder(Options{Dir: dir, RingTicks: 64, ChunkSize: 1 << 10, DrainInterval: time.Millisecond},
		func(w io.Writer) io.Writer { sink.w = w; return sink })
	if err != nil {
		t.Fatal(err)
	}
	var g tickGen
	var i uint64
	deadline := time.Now().Add(10 * time.Second)
	for blocked := false; !blocked; i++ { // run until the writer hangs in the sink
		if errors.Is(r.Record(g.make(i)), ErrRingFull) {
			time.Sleep(100 * time.Microsecond)
		}
		select {
		case <-sink.blocked:
			blocked = true
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never reached the sink")
		}
	}
	const stalled = 5000
	refused := 0
	for end := i + stalled; i < end; i++ {
		switch err := r.Record(g.make(i)); {
		case errors.Is(err, ErrRingFull):
			refused++
		case err != nil:
			t.Fatal(err)
		}
	}
	if refused < stalled-r.ring.capacity() {
		t.Fatalf("%d of %d ticks refused while the disk stalled, ring holds %d", refused, stalled, r.ring.capacity())
	}
	st := r.Stats()
	if st.Recorded+st.Dropped != i {
		t.Fatalf("stats %+v after %d ticks", st, i)
	}
	stalledRefusals := refused
	close(sink.release)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st = r.Stats()
	if st.Written != st.Recorded || st.Lost != 0 {
		t.Fatalf("stats %+v: not every queued tick was written", st)
	}
	files, _ := Recordings(dir, "")
	ticks := checkContiguousOrGaps(t, files)
	if uint64(len(ticks)) != st.Written {
		t.Fatalf("read %d ticks, written %d", len(ticks), st.Written)
	}
	_, meta := mustReadAll(t, files[0])
	// The file counts the drops while it was open: all of the stall's, perhaps not the few
	// before the writer opened it.
	if d, err := strconv.Atoi(meta[MetadataSummary]["dropped"]); err != nil || d < stalledRefusals || uint64(d) > st.Dropped {
		t.Errorf("summary %v, want between %d and %d dropped", meta[MetadataSummary], stalledRefusals, st.Dropped)
	}
}

// checkContiguousOrGaps reads every file (each must be complete) and returns their ticks,
// checking only that indexes increase.
func checkContiguousOrGaps(t *testing.T, files []string) []Tick {
	t.Helper()
	var all []Tick
	for _, f := range files {
		ticks, _ := mustReadAll(t, f)
		for _, tick := range ticks {
			if len(all) > 0 && tick.Index <= all[len(all)-1].Index {
				t.Fatalf("tick %d after %d", tick.Index, all[len(all)-1].Index)
			}
			all = append(all, tick)
		}
	}
	return all
}

func TestRecordRefusals(t *testing.T) {
	r := newTestRecorder(t, Options{MaxObservation: 8, MaxEventBytes: 16})
	var g tickGen
	good := *g.make(0)
	tests := []struct {
		name   string
		change func(t *Tick)
	}{
		{"short sensor", func(t *Tick) { t.Sensor = t.Sensor[:207] }},
		{"long command", func(t *Tick) { t.Command = make([]byte, 173) }},
		{"action of 11", func(t *Tick) { t.Action = t.Action[:11] }},
		{"observation too long", func(t *Tick) { t.Observation = make([]float32, 9) }},
		{"events too long", func(t *Tick) { t.Events = make([]byte, 17) }},
		{"negative time", func(t *Tick) { t.UnixNano = -1 }},
	}
	for i, tc := range tests {
		tick := good
		tick.Observation, tick.Events = nil, nil
		tc.change(&tick)
		if err := r.Record(&tick); !errors.Is(err, ErrInvalidTick) {
			t.Errorf("%s: %v, want ErrInvalidTick", tc.name, err)
		}
		if got := r.Stats().Rejected; got != uint64(i+1) {
			t.Errorf("%s: rejected count %d", tc.name, got)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Record(&good); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	tests := []Options{
		{},
		{Dir: "x", Compression: "brotli"},
		{Dir: "x", ChunkSize: 64 << 20},
		{Dir: "x", MaxFiles: -1},
		{Dir: "x", MaxObservation: 1 << 20},
	}
	for _, opts := range tests {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) accepted", opts)
		}
	}
}

// TestUnwritableDirectory: when the directory disappears the writer logs, counts the
// ticks it could not write and carries on once it can write again.
func TestUnwritableDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	r := newTestRecorder(t, Options{Dir: dir, RingTicks: 4096, MaxFileDuration: time.Second, Logger: slog.New(slog.DiscardHandler)})
	var g tickGen
	recordRange(t, r, &g, 0, 1500) // the second file is open when the directory goes
	waitFor(t, func() bool { return r.Stats().Written == 1500 })
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	recordRange(t, r, &g, 1500, 2600) // rotation at 2000 fails to publish and to open
	err := r.Close()
	st := r.Stats()
	if st.WriteErrors == 0 || st.Lost == 0 {
		t.Fatalf("stats %+v, close %v: disk errors not counted", st, err)
	}
	if st.Written+st.Lost != 2600 {
		t.Errorf("stats %+v: written + lost != recorded", st)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
