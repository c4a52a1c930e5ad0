package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"

	"github.com/dualforce/dualforce/skills"
)

// Num is a float64 that JSON-encodes NaN and infinities as null (JSON has no
// such numbers, and a diverging run must still be logged) and finite values
// in the shortest form that reads back exactly.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler; null reads as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("metrics: number %q: %w", b, err)
	}
	*n = Num(f)
	return nil
}

// IterationKey is the field every record carries: the x axis of plots and
// the cut of Resume.
const IterationKey = "iteration"

// Log appends one JSON object per line to a file. It is not safe for
// concurrent use.
type Log struct {
	f   *os.File
	w   *bufio.Writer
	buf bytes.Buffer
}

// Create starts a new log at path, replacing any old one.
func Create(path string) (*Log, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Log{f: f, w: bufio.NewWriter(f)}, nil
}

// ErrMalformed reports a log line that is not a JSON object with a numeric
// iteration.
var ErrMalformed = errors.New("metrics: malformed log line")

// Resume keeps the lines of the log at path whose iteration is at most upto
// (the iteration of the checkpoint a run resumes from), replacing the file
// atomically, and opens it for appending. A missing log is started afresh.
func Resume(path string, upto int) (*Log, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Create(path)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var kept [][]byte
	err = eachLine(path, old, func(line []byte) error {
		it, err := lineIteration(line)
		if err == nil && it <= upto {
			kept = append(kept, line)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	err = skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		for _, line := range kept {
			if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Log{f: f, w: bufio.NewWriter(f)}, nil
}

// Records decodes every line of the log at path into a T (a missing log has none), as
// Resume reads it.
func Records[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out []T
	err = eachLine(path, data, func(line []byte) error {
		var rec T
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// eachLine calls f with every non-blank line of the log data read from path. A line f refuses
// is an error, except the last one: a line cut short by a crash can only be the last, and it
// is dropped.
func eachLine(path string, data []byte, f func(line []byte) error) error {
	lines := bytes.Split(data, []byte("\n"))
	for n, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := f(line); err != nil {
			if n == len(lines)-1 {
				return nil
			}
			return fmt.Errorf("%s line %d: %w", path, n+1, err)
		}
	}
	return nil
}

func lineIteration(line []byte) (int, error) {
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var it *int
	if err := json.Unmarshal(rec[IterationKey], &it); err != nil || it == nil {
		return 0, fmt.Errorf("%w: no integer %q", ErrMalformed, IterationKey)
	}
	return *it, nil
}

// Write appends rec (any value that encodes as a JSON object with an
// iteration field) as one line and flushes it, so the file can be followed
// while the run goes on.
func (l *Log) Write(rec any) error {
	l.buf.Reset()
	if err := json.NewEncoder(&l.buf).Encode(rec); err != nil {
		return fmt.Errorf("metrics: encode: %w", err)
	}
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Close flushes and closes the file.
func (l *Log) Close() error {
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Series are columns of a log: the iteration of every line, and per
// requested key its value (NaN where the line has null or lacks the key).
type Series struct {
	Iteration []float64
	Values    map[string][]float64
}

// ReadSeries reads the columns keys of the log at path. Like Resume it drops
// a last line cut short, so a log can be plotted while its run writes it.
func ReadSeries(path string, keys ...string) (Series, error) {
	s := Series{Values: make(map[string][]float64, len(keys))}
	row := make([]float64, len(keys))
	err := eachRecord(path, func(rec map[string]json.RawMessage) error {
		var it Num
		if err := json.Unmarshal(rec[IterationKey], &it); err != nil || math.IsNaN(float64(it)) {
			return fmt.Errorf("%w: no numeric %q", ErrMalformed, IterationKey)
		}
		// The whole line is checked before any of it is kept: a refused last
		// line leaves the columns as they were.
		for i, k := range keys {
			v := Num(math.NaN())
			if raw, ok := rec[k]; ok {
				if err := json.Unmarshal(raw, &v); err != nil {
					return fmt.Errorf("%w: %q is not a number", ErrMalformed, k)
				}
			}
			row[i] = float64(v)
		}
		s.Iteration = append(s.Iteration, float64(it))
		for i, k := range keys {
			s.Values[k] = append(s.Values[k], row[i])
		}
		return nil
	})
	if err != nil {
		return Series{}, err
	}
	return s, nil
}

// eachRecord calls f with every non-blank line of the log at path as a JSON
// object, as eachLine does.
func eachRecord(path string, f func(rec map[string]json.RawMessage) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return eachLine(path, data, func(line []byte) error {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return f(rec)
	})
}

// Columns lists the numeric columns of the log at path, sorted: the keys whose value is a
// number or null on every line that has them (nested objects, strings and booleans are left
// out), IterationKey excepted. A reader that does not know which run wrote a log (a report)
// plots what is there.
func Columns(path string) ([]string, error) {
	numeric := map[string]bool{}
	err := eachRecord(path, func(rec map[string]json.RawMessage) error {
		for k, raw := range rec {
			var v Num
			ok := json.Unmarshal(raw, &v) == nil
			if was, seen := numeric[k]; seen {
				ok = ok && was
			}
			numeric[k] = ok
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for k, ok := range numeric {
		if ok && k != IterationKey {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}
