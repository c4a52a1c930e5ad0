package metrics

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is a progress bar with rate and ETA. A nil *Bar is a valid, silent
// bar, so callers need not check whether one is shown.
type Bar struct {
	bar *progressbar.ProgressBar
}

// NewBar returns a bar from done to total drawn on w, or nil (silent) when
// quiet is set or w is not a terminal: logs redirected to a file should not
// fill with carriage returns.
func NewBar(w io.Writer, total, done int, description string, quiet bool) *Bar {
	if quiet || !IsTerminal(w) {
		return nil
	}
	return newBar(w, total, done, description)
}

func newBar(w io.Writer, total, done int, description string) *Bar {
	b := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("it"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth(),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)
	_ = b.Set(done)
	return &Bar{bar: b}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Set moves the bar to n done.
func (b *Bar) Set(n int) {
	if b != nil {
		_ = b.bar.Set(n)
	}
}

// Describe replaces the text before the bar (the latest figures, say).
func (b *Bar) Describe(s string) {
	if b != nil {
		b.bar.Describe(s)
	}
}

// Finish completes the bar and ends its line.
func (b *Bar) Finish() {
	if b != nil {
		_ = b.bar.Finish()
	}
}
