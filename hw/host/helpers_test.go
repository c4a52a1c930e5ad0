package host_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/dualforce/dualforce/hw/board"
	"github.com/dualforce/dualforce/hw/board/boardtest"
	"github.com/dualforce/dualforce/hw/board/server"
	"github.com/dualforce/dualforce/hw/link"
	"github.com/dualforce/dualforce/hw/proto"
)

// rig is an emulated board served on one end of an in-process pipe; the test owns the other.
type rig struct {
	host     *link.PipeEnd
	boardEnd *link.PipeEnd
	srv      *server.Server
}

// startBoard runs a board with a first-order plant behind a pipe until the test ends.
func startBoard(t testing.TB, cfg board.Config, opts server.Options) *rig {
	t.Helper()
	b := boardtest.FirstOrder(t, cfg)
	h, be := link.Pipe()
	srv := server.New(b, be, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("board server: %v", err)
		}
		h.Close()
		be.Close()
	})
	return &rig{host: h, boardEnd: be, srv: srv}
}

// logBuffer is a slog text handler's output, safe to read while the session logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// enableAll enables every motor with the given gains and position ref (motor side).
func enableAll(kp, kd, pos float64) proto.Command {
	var c proto.Command
	for d := range c.Drivers {
		c.Drivers[d].Mode = proto.ModeEnableSystem | proto.ModeEnableMotor1 | proto.ModeEnableMotor2
	}
	for m := range proto.NumMotors {
		*c.Motor(m) = proto.MotorCommand{PositionRef: pos, Kp: kp, Kd: kd}
	}
	return c
}
