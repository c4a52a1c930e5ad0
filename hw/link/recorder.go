package link

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Recorder is a Conn that passes everything through to another Conn and writes every frame read
// or written to a classic pcap file (Ethernet, microsecond timestamps) that Wireshark and tshark
// open and NewReplay plays back. Pcap has no direction field: the source MAC tells who sent a frame.
//
// A failing recording never fails the link: the first write error stops the recording and is
// kept for Err and Close. Wrap w in a bufio.Writer on a real file; Close flushes it.
type Recorder struct {
	conn Conn

	mu     sync.Mutex // frames come from the reading and the writing goroutine
	w      io.Writer
	recHdr [pcapRecHeaderLen]byte
	err    error
}

// NewRecorder writes the pcap file header to w and returns the recording Conn around c.
func NewRecorder(c Conn, w io.Writer) (*Recorder, error) {
	var hdr [pcapFileHeaderLen]byte
	putPcapFileHeader(hdr[:])
	if _, err := w.Write(hdr[:]); err != nil {
		return nil, fmt.Errorf("link: write pcap header: %w", err)
	}
	return &Recorder{conn: c, w: w}, nil
}

// WriteFrame sends frame and records it once sent.
func (r *Recorder) WriteFrame(frame []byte) error {
	if err := r.conn.WriteFrame(frame); err != nil {
		return err
	}
	r.record(frame)
	return nil
}

// ReadFrame receives a frame and records it.
func (r *Recorder) ReadFrame(buf []byte) (int, error) {
	n, err := r.conn.ReadFrame(buf)
	if err != nil {
		return n, err
	}
	r.record(buf[:n])
	return n, nil
}

// SetReadTimeout sets the wrapped Conn's read timeout.
func (r *Recorder) SetReadTimeout(d time.Duration) error { return r.conn.SetReadTimeout(d) }

// Err is the error that stopped the recording, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close closes the wrapped Conn, flushes w if it has a Flush method (bufio.Writer does) and
// reports any recording error. It does not close w.
func (r *Recorder) Close() error {
	errs := []error{r.conn.Close()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.w.(interface{ Flush() error }); ok && r.err == nil {
		if err := f.Flush(); err != nil {
			r.err = fmt.Errorf("link: flush pcap recording: %w", err)
		}
	}
	errs = append(errs, r.err)
	return errors.Join(errs...)
}

func (r *Recorder) record(frame []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	putPcapRecordHeader(r.recHdr[:], time.Now(), len(frame))
	if _, err := r.w.Write(r.recHdr[:]); err != nil {
		r.err = fmt.Errorf("link: pcap recording stopped: %w", err)
		return
	}
	if _, err := r.w.Write(frame); err != nil {
		r.err = fmt.Errorf("link: pcap recording stopped: %w", err)
	}
}
