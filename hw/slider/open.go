package slider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goburrow/serial"
)

// Defaults of Config.
const (
	DefaultBaud         = 115200
	DefaultGlob         = "/dev/ttyACM*"
	DefaultProbeTimeout = 500 * time.Millisecond
)

// ErrNoDevice is returned by Open when auto-detection finds no slider box.
var ErrNoDevice = errors.New("slider: no slider box found")

// Config selects and configures the serial port. Zero values mean the defaults.
type Config struct {
	// Path is the device; "" scans Glob and takes the first candidate that sends a good line.
	Path string
	// Baud is the line rate (default 115200). The frame is always 8N1.
	Baud int
	// StaleAfter is the silence after which Snapshot reports a fault (default 50 ms).
	StaleAfter time.Duration
	// Glob lists auto-detection candidates (default /dev/ttyACM*).
	Glob string
	// ProbeTimeout is how long each candidate has to send a good line (default 500 ms).
	ProbeTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Baud == 0 {
		c.Baud = DefaultBaud
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.Glob == "" {
		c.Glob = DefaultGlob
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	return c
}

// Open opens the slider box and starts reading it. With an explicit Path it returns as soon as
// the port is configured; Snapshot reports stale until lines arrive. Without one it probes the
// candidates of Glob in order. ctx bounds only the opening; the Box lives until Close.
func Open(ctx context.Context, cfg Config) (*Box, error) {
	cfg = cfg.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.Path != "" {
		return openBox(cfg.Path, cfg)
	}
	return detect(ctx, cfg)
}

func detect(ctx context.Context, cfg Config) (*Box, error) {
	paths, err := filepath.Glob(cfg.Glob)
	if err != nil {
		return nil, fmt.Errorf("slider: candidate pattern %q: %w", cfg.Glob, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no device matches %q", ErrNoDevice, cfg.Glob)
	}
	var errs []error
	for _, path := range paths {
		box, err := probe(ctx, path, cfg)
		if err == nil {
			slog.Info("slider box found", "path", path)
			return box, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("slider: auto-detect: %w", ctxErr)
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w among %d candidates of %q:\n%w", ErrNoDevice, len(paths), cfg.Glob,
		errors.Join(errs...))
}

// probe opens path and keeps it only if a good line arrives within cfg.ProbeTimeout.
func probe(ctx context.Context, path string, cfg Config) (*Box, error) {
	box, err := openBox(path, cfg)
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(cfg.ProbeTimeout)
	defer timer.Stop()
	select {
	case <-box.firstGood:
		return box, nil
	case <-box.done:
		err = fmt.Errorf("%s: stream ended before a good line: %w", path, box.Err())
	case <-timer.C:
		s := box.Snapshot(time.Now())
		err = fmt.Errorf("%s: no good line within %v (%d garbage lines, last: %v)",
			path, cfg.ProbeTimeout, s.GarbageLines, s.LastGarbage)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = box.Close()
	return nil, err
}

// serialPoll bounds how long a Read sits in goburrow's select, and so how long Close waits.
const serialPoll = 20 * time.Millisecond

func openBox(path string, cfg Config) (*Box, error) {
	port, err := serial.Open(&serial.Config{
		Address: path,
		// All four set explicitly: goburrow defaults to Even parity and 19200 baud.
		BaudRate: cfg.Baud,
		DataBits: 8,
		StopBits: 1,
		Parity:   "N",
		Timeout:  serialPoll,
	})
	if err != nil {
		return nil, fmt.Errorf("slider: open %s: %w", path, err)
	}
	return NewBox(&serialPort{port: port}, cfg.StaleAfter), nil
}

// serialPort adapts a goburrow port to the io.Reader contract the Box relies on: its timeouts
// are retried rather than returned, a hang-up reads as io.EOF, n is never negative, and Close
// is safe while a Read is in progress (goburrow's Close rewrites the descriptor Read uses, so the
// two are serialised and Close waits at most serialPoll).
type serialPort struct {
	mu      sync.Mutex
	port    serial.Port
	closed  bool
	closing atomic.Bool
}

func (p *serialPort) Read(b []byte) (int, error) {
	for {
		if p.closing.Load() {
			return 0, os.ErrClosed
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return 0, os.ErrClosed
		}
		n, err := p.port.Read(b)
		p.mu.Unlock()
		n = max(n, 0) // goburrow passes on the raw syscall's -1
		switch {
		case errors.Is(err, serial.ErrTimeout), errors.Is(err, syscall.EAGAIN),
			errors.Is(err, syscall.EINTR):
			if n > 0 {
				return n, nil
			}
		case err != nil:
			return n, err
		case n == 0 && len(b) > 0:
			// select reported the descriptor readable, yet there is nothing: the line hung up.
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

func (p *serialPort) Close() error {
	p.closing.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.port.Close()
}
