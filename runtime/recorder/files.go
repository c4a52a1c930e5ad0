package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/foxglove/mcap/go/mcap"
)

// Recording file suffixes: finished, and being written (or left by a crash).
const (
	finishedSuffix = ".mcap"
	partSuffix     = ".mcap.part"
)

// retryAfter is how long, in tick time, the writer waits before it tries a new file after a
// failed file operation: a full disk is not retried at 1 kHz.
const retryAfter = int64(time.Second)

// rotator writes dequeued ticks to the current file and rotates files. It runs on the writer
// goroutine only, except for the counters.
type rotator struct {
	opts  *Options
	wrap  func(io.Writer) io.Writer // nil outside tests
	stats func() Stats
	log   *slog.Logger
	now   func() time.Time // names files

	seg     *segment
	seq     int   // files opened so far, part of the name
	retryAt int64 // tick time before which no new file is tried
	scratch []byte
	msg     mcap.Message

	written, lost, writeErrors, files atomic.Uint64
}

// segment is one file being written.
type segment struct {
	file           *os.File
	buf            *bufio.Writer
	w              *mcap.Writer
	part, final    string
	start          int64 // tick time of the first tick
	ticks          uint64
	droppedAtStart uint64
}

func newRotator(opts *Options, wrap func(io.Writer) io.Writer, stats func() Stats) *rotator {
	return &rotator{opts: opts, wrap: wrap, stats: stats, log: opts.Logger.With("component", "recorder"), now: time.Now}
}

func (o *rotator) counters() Stats {
	return Stats{Written: o.written.Load(), Lost: o.lost.Load(), WriteErrors: o.writeErrors.Load(), Files: o.files.Load()}
}

// write writes one tick, opening or rotating files as needed. Errors are logged and counted:
// the recorder keeps going with the next file.
func (o *rotator) write(s *slot) {
	if o.seg != nil && o.due(s) {
		// The file is finished or abandoned either way; an error is logged and counted there.
		_ = o.finish(o.opts.MaxFiles - 1)
	}
	if o.seg == nil {
		if s.unixNano < o.retryAt {
			o.lost.Add(1)
			return
		}
		if err := o.open(s); err != nil {
			o.failed(s, "open", err)
			o.lost.Add(1)
			return
		}
	}
	if err := o.writeTick(s); err != nil {
		o.failed(s, "write", err)
		o.abandon()
		o.lost.Add(1)
		return
	}
	o.seg.ticks++
	o.written.Add(1)
}

func (o *rotator) due(s *slot) bool {
	return int64(o.seg.w.Offset()) >= o.opts.MaxFileBytes ||
		(o.opts.MaxFileDuration > 0 && s.unixNano-o.seg.start >= int64(o.opts.MaxFileDuration))
}

func (o *rotator) failed(s *slot, op string, err error) {
	o.writeErrors.Add(1)
	if s != nil {
		o.retryAt = s.unixNano + retryAfter
	}
	o.log.Error("recording failed", "op", op, "err", err)
}

func (o *rotator) open(s *slot) error {
	var f *os.File
	var base string
	for {
		o.seq++
		base = filepath.Join(o.opts.Dir, fmt.Sprintf("%s-%s-%06d", o.opts.Prefix, o.now().UTC().Format("20060102T150405.000Z"), o.seq))
		if _, err := os.Lstat(base + finishedSuffix); err == nil {
			continue // a finished recording of an earlier run has this name
		}
		var err error
		f, err = os.OpenFile(base+partSuffix, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	seg := &segment{file: f, part: base + partSuffix, final: base + finishedSuffix, start: s.unixNano, droppedAtStart: o.stats().Dropped}
	var sink io.Writer = f
	if o.wrap != nil {
		sink = o.wrap(f)
	}
	seg.buf = bufio.NewWriterSize(sink, 64<<10)
	err := seg.begin(o.opts, s.index)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(seg.part)
		return err
	}
	o.seg = seg
	return nil
}

func (seg *segment) begin(opts *Options, firstTick uint64) error {
	w, err := mcap.NewWriter(seg.buf, &mcap.WriterOptions{
		Chunked:          true,
		ChunkSize:        opts.ChunkSize,
		Compression:      opts.Compression,
		CompressionLevel: mcap.CompressionLevelFastest,
		IncludeCRC:       true,
	})
	if err != nil {
		return err
	}
	seg.w = w
	if err := w.WriteHeader(&mcap.Header{Library: "dualforce-recorder/" + FormatVersion}); err != nil {
		return err
	}
	meta := map[string]string{}
	for k, v := range opts.Metadata {
		meta[k] = v
	}
	meta["format"] = FormatVersion
	meta["first_tick"] = strconv.FormatUint(firstTick, 10)
	if err := w.WriteMetadata(&mcap.Metadata{Name: MetadataStart, Metadata: meta}); err != nil {
		return err
	}
	for _, d := range channelDefs {
		if err := w.WriteSchema(d.schemaRecord()); err != nil {
			return err
		}
		if err := w.WriteChannel(d.channelRecord()); err != nil {
			return err
		}
	}
	return nil
}

func (o *rotator) writeTick(s *slot) error {
	seq, t := uint32(s.index), uint64(s.unixNano)
	o.msg = mcap.Message{Sequence: seq, LogTime: t, PublishTime: t}
	put := func(kind channelKind, data []byte) error {
		o.msg.ChannelID, o.msg.Data = uint16(kind), data
		return o.seg.w.WriteMessage(&o.msg)
	}
	if s.hasSensor {
		if err := put(kindSensor, s.sensor[:]); err != nil {
			return err
		}
	}
	if s.hasCommand {
		if err := put(kindCommand, s.command[:]); err != nil {
			return err
		}
	}
	if len(s.obs) > 0 {
		o.scratch = appendValues(o.scratch[:0], s.index, s.obs)
		if err := put(kindObservation, o.scratch); err != nil {
			return err
		}
	}
	if s.hasAction {
		o.scratch = appendValues(o.scratch[:0], s.index, s.action[:])
		if err := put(kindAction, o.scratch); err != nil {
			return err
		}
	}
	if len(s.input) > 0 {
		if err := put(kindInput, s.input); err != nil {
			return err
		}
	}
	return eventLines(s.events, func(line []byte) error {
		o.scratch = appendEvent(o.scratch[:0], s.index, line)
		return put(kindEvents, o.scratch)
	})
}

// finish completes the current file, if any, and then deletes the oldest recordings until at
// most keep are left.
func (o *rotator) finish(keep int) error {
	if o.seg == nil {
		return nil
	}
	seg := o.seg
	o.seg = nil
	dropped := o.stats().Dropped - seg.droppedAtStart
	if err := seg.end(dropped); err != nil {
		o.failed(nil, "finish", err)
		_ = seg.file.Close()
		return fmt.Errorf("recorder: finish %s: %w", seg.part, err)
	}
	o.files.Add(1)
	if err := o.prune(keep); err != nil {
		o.failed(nil, "prune", err)
		return fmt.Errorf("recorder: %w", err)
	}
	return nil
}

// end writes the summary and footer, then publishes the file atomically under its final name.
func (seg *segment) end(dropped uint64) error {
	err := seg.w.WriteMetadata(&mcap.Metadata{Name: MetadataSummary, Metadata: map[string]string{
		"ticks":   strconv.FormatUint(seg.ticks, 10),
		"dropped": strconv.FormatUint(dropped, 10),
	}})
	if err != nil {
		return err
	}
	if err := seg.w.Close(); err != nil {
		return err
	}
	if err := seg.buf.Flush(); err != nil {
		return err
	}
	if err := seg.file.Sync(); err != nil {
		return err
	}
	if err := seg.file.Close(); err != nil {
		return err
	}
	if err := os.Rename(seg.part, seg.final); err != nil {
		return err
	}
	return syncDir(filepath.Dir(seg.final))
}

// abandon closes the current file as it is, leaving its ".part" behind.
func (o *rotator) abandon() {
	if o.seg != nil {
		_ = o.seg.file.Close()
		o.seg = nil
	}
}

// prune deletes the oldest recordings (finished or ".part", never the one being written)
// until at most keep are left.
func (o *rotator) prune(keep int) error {
	names, err := listRecordings(o.opts.Dir, o.opts.Prefix, true)
	if err != nil {
		return err
	}
	if o.seg != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return n == o.seg.part })
	}
	for len(names) > max(keep, 0) {
		if err := os.Remove(names[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		names = names[1:]
	}
	return nil
}

// Recordings lists the finished recordings with the given file name prefix in dir, oldest
// first. An empty prefix means the default, "flight".
func Recordings(dir, prefix string) ([]string, error) {
	if prefix == "" {
		prefix = "flight"
	}
	return listRecordings(dir, prefix, false)
}

func listRecordings(dir, prefix string, withParts bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, prefix+"-") {
			continue
		}
		if strings.HasSuffix(n, finishedSuffix) || (withParts && strings.HasSuffix(n, partSuffix)) {
			names = append(names, filepath.Join(dir, n))
		}
	}
	slices.Sort(names) // names start with the UTC start time
	return names, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
