package recorder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/dualforce/dualforce/hw/proto"
)

// Errors of reading a recording; the returned errors wrap one of them and say where.
var (
	ErrNotRecording = errors.New("recorder: not an MCAP recording")
	ErrTruncated    = errors.New("recorder: recording is truncated (the recorder did not finish it)")
	ErrCorrupt      = errors.New("recorder: recording is corrupt")
)

// Bounds on what the reader accepts, far above what the recorder writes, so that a corrupt
// length field costs at most this much memory.
const (
	maxRecordBytes = 16 << 20
	maxChunkBytes  = 16 << 20
)

// Reader reads the ticks of one recording in order.
type Reader struct {
	name   string
	lex    *mcap.Lexer
	closer io.Closer
	buf    []byte

	channels map[uint16]channelKind
	metadata map[string]map[string]string

	cur, next *Tick // next is returned by Next while cur is being filled
	curSeq    uint32
	curBusy   bool // cur holds at least one message
	high      uint64
	lastSeq   uint32
	seenTicks bool
	ticks     uint64 // ticks returned

	footer bool
	err    error // sticky
}

// Open opens the recording at path.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r, err := newReader(f, path, info.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a recording from src; name appears in errors.
func NewReader(src io.Reader, name string) (*Reader, error) {
	size := int64(-1)
	if s, ok := src.(interface{ Size() int64 }); ok { // bytes.Reader, strings.Reader
		size = s.Size()
	}
	return newReader(src, name, size)
}

// newReader reads from src of size bytes (-1: unknown); no record can be longer than the
// file, so a corrupt length field then costs no more memory than the file's size.
func newReader(src io.Reader, name string, size int64) (*Reader, error) {
	maxRecord := int64(maxRecordBytes)
	if size >= 0 {
		maxRecord = max(min(maxRecord, size), 1) // 0 would mean no limit
	}
	r := &Reader{
		name:     name,
		channels: map[uint16]channelKind{},
		metadata: map[string]map[string]string{},
		cur:      &Tick{},
		next:     &Tick{},
	}
	lex, err := mcap.NewLexer(src, &mcap.LexerOptions{
		ValidateChunkCRCs:        true,
		MaxRecordSize:            int(maxRecord),
		MaxDecompressedChunkSize: maxChunkBytes,
	})
	if err != nil {
		if errors.Is(err, &mcap.ErrBadMagic{}) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotRecording, name, err)
		}
		return nil, r.classify(err)
	}
	r.lex = lex
	tok, _, err := r.lexNext()
	if err != nil {
		lex.Close()
		return nil, r.classify(err)
	}
	if tok != mcap.TokenHeader {
		lex.Close()
		return nil, fmt.Errorf("%w: %s: first record is %v, not a header", ErrCorrupt, name, tok)
	}
	return r, nil
}

// Close releases the reader and the file Open opened.
func (r *Reader) Close() error {
	r.lex.Close()
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// Metadata returns the metadata records read so far by name: MetadataStart is there after the
// first Next, MetadataSummary once Next has returned io.EOF.
func (r *Reader) Metadata() map[string]map[string]string { return r.metadata }

// Next returns the next tick, io.EOF after the last tick of a complete recording, or an error
// wrapping ErrTruncated or ErrCorrupt after the last tick that could be read. The returned Tick
// and its slices are valid until the following call.
func (r *Reader) Next() (*Tick, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		tok, rec, err := r.lexNext()
		if err != nil {
			r.err = r.classify(err)
			if r.curBusy {
				return r.finishTick(), nil // the last tick, as complete as the file has it
			}
			return nil, r.err
		}
		done, err := r.handle(tok, rec)
		if err != nil {
			r.err = err
			return nil, err
		}
		if done {
			return r.finishTick(), nil
		}
	}
}

// handle applies one record; done when the record starts a new tick, cur then holds the
// finished tick and the message went into next.
func (r *Reader) handle(tok mcap.TokenType, rec []byte) (done bool, err error) {
	switch tok {
	case mcap.TokenChannel:
		c, err := mcap.ParseChannel(rec)
		if err != nil {
			return false, r.corrupt("channel record: %v", err)
		}
		r.channels[c.ID] = kindOfTopic(c.Topic)
	case mcap.TokenMetadata:
		m, err := mcap.ParseMetadata(rec)
		if err != nil {
			return false, r.corrupt("metadata record: %v", err)
		}
		if m.Name == MetadataStart {
			if err := r.start(m.Metadata); err != nil {
				return false, err
			}
		}
		r.metadata[m.Name] = m.Metadata
	case mcap.TokenFooter:
		r.footer = true
	case mcap.TokenMessage:
		m, err := mcap.ParseMessage(rec)
		if err != nil {
			return false, r.corrupt("message record: %v", err)
		}
		kind, ok := r.channels[m.ChannelID]
		if !ok {
			return false, r.corrupt("message on undeclared channel %d", m.ChannelID)
		}
		if kind == kindUnknown {
			return false, nil // a channel this version does not know
		}
		if r.curBusy && m.Sequence != r.curSeq {
			r.cur, r.next = r.next, r.cur
			resetTick(r.cur)
			done = true
		}
		if !r.curBusy || done {
			r.begin(r.cur, m)
		}
		return done, r.add(r.cur, kind, m.Data)
	}
	return false, nil
}

func (r *Reader) start(meta map[string]string) error {
	if v := meta["format"]; v != FormatVersion {
		return r.corrupt("recording format %q, this reader reads %q", v, FormatVersion)
	}
	first, err := strconv.ParseUint(meta["first_tick"], 10, 64)
	if err != nil {
		return r.corrupt("first_tick %q", meta["first_tick"])
	}
	if !r.seenTicks {
		r.high = first &^ 0xffffffff
	}
	return nil
}

// begin starts tick t with message m, recovering the full tick index from the 32-bit sequence.
func (r *Reader) begin(t *Tick, m *mcap.Message) {
	if r.seenTicks && m.Sequence < r.lastSeq {
		r.high += 1 << 32
	}
	r.seenTicks, r.lastSeq = true, m.Sequence
	r.curSeq, r.curBusy = m.Sequence, true
	t.Index = r.high | uint64(m.Sequence)
	t.UnixNano = int64(min(m.LogTime, 1<<63-1))
}

func (r *Reader) add(t *Tick, kind channelKind, data []byte) error {
	var err error
	switch kind {
	case kindSensor:
		if len(data) != proto.SensorLen || len(t.Sensor) > 0 {
			return r.corrupt("tick %d: sensor message of %d bytes (want one of %d)", t.Index, len(data), proto.SensorLen)
		}
		t.Sensor = append(t.Sensor, data...)
	case kindCommand:
		if len(data) != proto.CommandLen || len(t.Command) > 0 {
			return r.corrupt("tick %d: command message of %d bytes (want one of %d)", t.Index, len(data), proto.CommandLen)
		}
		t.Command = append(t.Command, data...)
	case kindObservation:
		if len(t.Observation) > 0 {
			return r.corrupt("tick %d: two observations", t.Index)
		}
		if t.Observation, err = decodeValues(t.Observation, data); err != nil {
			return r.corrupt("tick %d: observation: %v", t.Index, err)
		}
	case kindAction:
		if len(t.Action) > 0 {
			return r.corrupt("tick %d: two actions", t.Index)
		}
		if t.Action, err = decodeValues(t.Action, data); err != nil {
			return r.corrupt("tick %d: action: %v", t.Index, err)
		}
	case kindEvents:
		if t.Events, err = decodeEvent(t.Events, data); err != nil {
			return r.corrupt("tick %d: event: %v", t.Index, err)
		}
	case kindInput:
		if len(t.Input) > 0 || len(data) > MaxInputBytes {
			return r.corrupt("tick %d: input record of %d bytes (one of at most %d)", t.Index, len(data), MaxInputBytes)
		}
		t.Input = append(t.Input, data...)
	}
	return nil
}

// finishTick returns the completed tick: cur when the stream ended, else the one swapped out.
func (r *Reader) finishTick() *Tick {
	r.ticks++
	if r.err != nil {
		r.curBusy = false
		return r.cur
	}
	return r.next
}

func resetTick(t *Tick) {
	t.Sensor, t.Command = t.Sensor[:0], t.Command[:0]
	t.Observation, t.Action, t.Events, t.Input = t.Observation[:0], t.Action[:0], t.Events[:0], t.Input[:0]
}

// lexNext is the lexer's Next with the library's panics on some malformed chunk headers turned
// into errors.
func (r *Reader) lexNext() (tok mcap.TokenType, rec []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			tok, rec, err = mcap.TokenError, nil, r.corrupt("the mcap library failed on malformed data: %v", p)
		}
	}()
	tok, rec, err = r.lex.Next(r.buf)
	if cap(rec) > cap(r.buf) {
		r.buf = rec[:0]
	}
	return tok, rec, err
}

// classify wraps an error of the mcap library in ErrTruncated or ErrCorrupt.
func (r *Reader) classify(err error) error {
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrTruncated):
		return err
	case errors.Is(err, io.EOF) && r.footer:
		return io.EOF
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s: ends after %d ticks without a footer", ErrTruncated, r.name, r.ticks)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %s: after %d ticks: %v", ErrTruncated, r.name, r.ticks, err)
	}
	return fmt.Errorf("%w: %s: after %d ticks: %v", ErrCorrupt, r.name, r.ticks, err)
}

func (r *Reader) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, r.name, fmt.Sprintf(format, args...))
}
