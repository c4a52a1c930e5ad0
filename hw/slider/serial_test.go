package slider

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dualforce/dualforce/hw/slider/slidertest"
)

// stream writes line every 0.5 ms, like the box, until the returned stop is called.
func stream(t *testing.T, f *os.File, line string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			// A deadline keeps a full pty buffer (nobody reading) from blocking the stop.
			_ = f.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := f.WriteString(line); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// eventually polls the box until cond holds; the deadline only bounds a hung test.
func eventually(t *testing.T, box *Box, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := box.Snapshot(time.Now())
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last snapshot %+v", what, s)
		}
		time.Sleep(time.Millisecond)
	}
}

func openSerial(t *testing.T, cfg Config) *Box {
	t.Helper()
	box, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := box.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return box
}

// TestOpenSets8N1 spoils the terminal with goburrow's defaults (Even parity, 19200, two stop
// bits, 7 data bits) and checks that Open sets every parameter itself.
func TestOpenSets8N1(t *testing.T) {
	pair := slidertest.NewPtyPair(t, t.TempDir(), "ttyACM0")
	fd, err := unix.Open(pair.Port, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("open %s: %v", pair.Port, err)
	}
	defer unix.Close(fd)
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatalf("TCGETS: %v", err)
	}
	tio.Cflag = tio.Cflag&^(unix.CBAUD|unix.CSIZE) | unix.B19200 | unix.CS7 | unix.PARENB | unix.CSTOPB
	tio.Ispeed, tio.Ospeed = 19200, 19200
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		t.Fatalf("TCSETS: %v", err)
	}

	openSerial(t, Config{Path: pair.Port})

	tio, err = unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatalf("TCGETS: %v", err)
	}
	if got := tio.Cflag & unix.CBAUD; got != unix.B115200 {
		t.Errorf("baud code %#o, want B115200 (%#o)", got, unix.B115200)
	}
	if got := tio.Cflag & unix.CSIZE; got != unix.CS8 {
		t.Errorf("character size %#o, want CS8", got)
	}
	if tio.Cflag&unix.PARENB != 0 || tio.Iflag&unix.INPCK != 0 {
		t.Errorf("parity enabled: cflag %#o iflag %#o", tio.Cflag, tio.Iflag)
	}
	if tio.Cflag&unix.CSTOPB != 0 {
		t.Errorf("two stop bits set")
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO) != 0 {
		t.Errorf("terminal not raw: lflag %#o", tio.Lflag)
	}
}

func TestSerialBoxLatchAndCounters(t *testing.T) {
	pair := slidertest.NewPtyPair(t, t.TempDir(), "ttyACM0")
	box := openSerial(t, Config{Path: pair.Port, StaleAfter: time.Hour})
	wire := pair.OpenWire(t)

	slidertest.Send(t, wire, "023 1023\r\n", "1 0 1023\r\n")
	s := eventually(t, box, "the first good line", func(s Snapshot) bool { return s.GoodLines == 1 })
	if s.Sliders != [4]float64{0, 1} || s.N != 2 || s.Latched || s.Halt() {
		t.Fatalf("first line: %+v", s)
	}

	slidertest.Send(t, wire, "0 512 512\r\n")
	s = eventually(t, box, "the press", func(s Snapshot) bool { return s.GoodLines == 2 })
	if !s.Pressed || !s.Latched || !s.Halt() {
		t.Fatalf("after press: %+v, want latched", s)
	}
	if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrEStopPressed) {
		t.Fatalf("reset while pressed: %v, want ErrEStopPressed", err)
	}

	slidertest.Send(t, wire, "1 100 200 300 400\r\n", "1 100 200 300 400\r\n", "1 100 200 300 400\r\n")
	s = eventually(t, box, "release lines", func(s Snapshot) bool { return s.GoodLines == 5 })
	if s.Pressed || !s.Latched || s.N != 4 || s.Sliders[3] != 400.0/1023 {
		t.Fatalf("after release lines: %+v, want still latched", s)
	}

	slidertest.Send(t, wire, "x y z\r\n", "1 2\r\n", "1 2000 3\r\n", "\r\n", strings.Repeat("1 2 3 ", 40)+"\r\n")
	s = eventually(t, box, "garbage", func(s Snapshot) bool { return s.GarbageLines == 5 })
	if s.GoodLines != 5 || s.LastGarbage.Reason() != ReasonTooLong || !s.Latched {
		t.Fatalf("after garbage: %+v", s)
	}

	if err := box.ResetEStop(time.Now()); err != nil {
		t.Fatalf("reset while released: %v", err)
	}
	if s := box.Snapshot(time.Now()); s.Latched || s.Halt() {
		t.Fatalf("after reset: %+v", s)
	}

	pair.Unplug()
	s = eventually(t, box, "the hang-up", func(s Snapshot) bool { return s.ReaderStopped })
	if !s.Fault() || box.Err() == nil {
		t.Fatalf("after unplug: %+v, Err %v; want a fault and an error", s, box.Err())
	}
	t.Logf("unplugged: %v", box.Err())
}

func TestSerialBoxStaleness(t *testing.T) {
	pair := slidertest.NewPtyPair(t, t.TempDir(), "ttyACM0")
	box := openSerial(t, Config{Path: pair.Port}) // default 50 ms
	wire := pair.OpenWire(t)

	stop := stream(t, wire, "1 1023 0\r\n")
	eventually(t, box, "fresh lines", func(s Snapshot) bool { return !s.Stale && !s.Fault() })
	stop()
	s := eventually(t, box, "staleness after silence", func(s Snapshot) bool { return s.Stale })
	if !s.Fault() || !s.Halt() || s.Age <= DefaultStaleAfter || s.ReaderStopped {
		t.Fatalf("silent box: %+v", s)
	}
	if err := box.ResetEStop(time.Now()); !errors.Is(err, ErrStale) {
		t.Fatalf("reset of a silent box: %v, want ErrStale", err)
	}
	stream(t, wire, "1 0 0 0 1023\r\n")
	s = eventually(t, box, "fresh again", func(s Snapshot) bool { return !s.Stale && s.N == 4 })
	if s.GarbageLines != 0 || s.Latched {
		t.Fatalf("after resuming: %+v", s)
	}
}

func TestAutoDetect(t *testing.T) {
	dir := t.TempDir()
	noisy := slidertest.NewPtyPair(t, dir, "ttyACM0")
	slidertest.NewPtyPair(t, dir, "ttyACM1") // silent
	good := slidertest.NewPtyPair(t, dir, "ttyACM2")
	stream(t, noisy.OpenWire(t), "hello from another gadget\r\n")
	stream(t, good.OpenWire(t), "1 341 682\r\n")

	box := openSerial(t, Config{Glob: filepath.Join(dir, "ttyACM?"), ProbeTimeout: 200 * time.Millisecond})
	s := box.Snapshot(time.Now())
	if s.GoodLines == 0 || s.N != 2 || s.Sliders != [4]float64{341.0 / 1023, 682.0 / 1023} || s.GarbageLines != 0 {
		t.Fatalf("detected box: %+v, want the one on ttyACM2", s)
	}
}

func TestAutoDetectFindsNothing(t *testing.T) {
	dir := t.TempDir()
	noisy := slidertest.NewPtyPair(t, dir, "ttyACM0")
	slidertest.NewPtyPair(t, dir, "ttyACM1")
	notTTY := filepath.Join(dir, "ttyACM2")
	if err := os.WriteFile(notTTY, []byte("1 1 1\n1 1 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stream(t, noisy.OpenWire(t), "1 2 3 4\r\n")

	_, err := Open(t.Context(), Config{Glob: filepath.Join(dir, "ttyACM?"), ProbeTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open: %v, want ErrNoDevice", err)
	}
	for _, want := range []string{
		"ttyACM0: no good line within 200ms", "want 3 or 5 fields",
		"ttyACM1: no good line within 200ms (0 garbage lines",
		"ttyACM2", "could not set setting",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	t.Logf("error text:\n%v", err)

	_, err = Open(t.Context(), Config{Glob: filepath.Join(dir, "nothing*")})
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "no device matches") {
		t.Fatalf("empty glob: %v", err)
	}
}

func TestAutoDetectCancelled(t *testing.T) {
	dir := t.TempDir()
	slidertest.NewPtyPair(t, dir, "ttyACM0")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, Config{Glob: filepath.Join(dir, "ttyACM*"), ProbeTimeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open: %v, want context.DeadlineExceeded", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		cfg  Config
		is   error
		text string
	}{
		{"missing device", t.Context(), Config{Path: filepath.Join(dir, "ttyACM9")}, fs.ErrNotExist, "ttyACM9"},
		{"not a terminal", t.Context(), Config{Path: regular}, nil, "could not set setting"},
		{"unsupported baud", t.Context(), Config{Path: regular, Baud: 12345}, nil, "unsupported baud rate 12345"},
		{"bad glob", t.Context(), Config{Glob: "[", ProbeTimeout: time.Millisecond}, filepath.ErrBadPattern, `"["`},
		{"cancelled", cancelled, Config{Path: regular}, context.Canceled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box, err := Open(tt.ctx, tt.cfg)
			if err == nil {
				_ = box.Close()
				t.Fatal("Open succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q lacks %q", err, tt.text)
			}
		})
	}
}
