package slider

import "bytes"

// lineAssembler cuts a byte stream into lines without allocating. It drops everything up to the
// first newline, because a port opened mid-stream starts inside a line and a tail such as
// "0 30 40" of "1 10 20 30 40" would parse as a valid, pressed E-stop. Lines longer than its
// buffer are reported as too long and skipped up to the next newline.
type lineAssembler struct {
	buf      [MaxLineLen + 1]byte // +1 keeps a trailing '\r' of a maximal line
	n        int
	overflow bool
	synced   bool
}

// next consumes p up to and including the first newline. It returns how many bytes it used and,
// when a line ended, that line (valid until the next call) or, for an over-long line, tooLong and
// no line.
func (a *lineAssembler) next(p []byte) (used int, line []byte, tooLong, ended bool) {
	end := bytes.IndexByte(p, '\n')
	chunk := p
	if end >= 0 {
		chunk = p[:end]
		used = end + 1
	} else {
		used = len(p)
	}
	if a.synced && !a.overflow {
		if a.n+len(chunk) > len(a.buf) {
			a.overflow = true
		} else {
			a.n += copy(a.buf[a.n:], chunk)
		}
	}
	if end < 0 {
		return used, nil, false, false
	}
	if !a.synced {
		a.synced = true
		return used, nil, false, false
	}
	if !a.overflow {
		line = a.buf[:a.n]
	}
	tooLong = a.overflow
	a.n, a.overflow = 0, false
	return used, line, tooLong, true
}
