package driver

import (
	"sync"
	"testing"
	"time"

	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/hw/slider/slidertest"
	"github.com/dualforce/dualforce/runtime/core"
)

// TestSliderEStopOverSerialDamps runs the slider box over a real socat pseudo-terminal pair:
// the box streams "released" lines every 0.5 ms as the Arduino does; pressing the button
// must put the robot in damping on the next control tick after the box sees the line.
func TestSliderEStopOverSerialDamps(t *testing.T) {
	pair := slidertest.NewPtyPair(t, t.TempDir(), "ttyACM0")
	box, err := slider.Open(t.Context(), slider.Config{Path: pair.Port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = box.Close() })
	wire := pair.OpenWire(t)

	var mu sync.Mutex
	line := "1 512 512\n"
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the Arduino
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Microsecond):
			}
			mu.Lock()
			l := line
			mu.Unlock()
			if _, err := wire.WriteString(l); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); wg.Wait() })

	var snap slider.Snapshot
	r := newRig(t, constantBank(t, [12]float32{}), func(cfg *core.Config) { cfg.SliderRequired = true })
	r.ls.Slider = func(time.Duration) *slider.Snapshot {
		snap = box.Snapshot(time.Now())
		return &snap
	}
	for box.Snapshot(time.Now()).Stale {
		time.Sleep(time.Millisecond)
	}
	r.standing()
	if r.core.Fault() != "" {
		t.Fatalf("fault %q before the E-stop", r.core.Fault())
	}

	pressed := time.Now()
	mu.Lock()
	line = "0 512 512\n"
	mu.Unlock()
	for !box.Snapshot(time.Now()).Latched {
		time.Sleep(50 * time.Microsecond)
		if time.Since(pressed) > 2*time.Second {
			t.Fatal("the box never latched the E-stop")
		}
	}
	seen := time.Since(pressed)
	tickBefore := r.ls.tick
	r.until(2, "damping after the E-stop", func() bool { return r.firstDamp > tickBefore })
	if r.core.Fault() != "slider_estop" {
		t.Fatalf("fault %q", r.core.Fault())
	}
	t.Logf("E-stop line reached the box after %v (pty + reader); damping on tick %d, %d ms after the box latched",
		seen, r.firstDamp, r.firstDamp-tickBefore)

	// Releasing the button does not release the robot: the latch holds until a reset.
	mu.Lock()
	line = "1 512 512\n"
	mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	r.ls.Run(t.Context(), 50)
	if r.core.Phase() != core.PhaseDamp || r.core.Fault() != "slider_estop" {
		t.Fatalf("phase %v fault %q after release", r.core.Phase(), r.core.Fault())
	}
}
