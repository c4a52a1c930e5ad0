package recorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/foxglove/mcap/go/mcap"
)

// smallRecording writes n ticks with small chunks and returns the file's bytes.
func smallRecording(t testing.TB, n uint64) []byte {
	t.Helper()
	dir := t.TempDir()
	r, err := New(Options{Dir: dir, ChunkSize: 4 << 10, RingTicks: int(n)})
	if err != nil {
		t.Fatal(err)
	}
	var g tickGen
	recordRange(t, r, &g, 0, n)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := Recordings(dir, "")
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readBytes reads a recording from memory: the ticks read and the final error.
func readBytes(data []byte) (int, error) {
	r, err := NewReader(bytes.NewReader(data), "test.mcap")
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			return n, err
		}
		n++
	}
}

func TestTruncatedRecording(t *testing.T) {
	const n = 300
	data := smallRecording(t, n)
	if got, err := readBytes(data); got != n || !errors.Is(err, io.EOF) {
		t.Fatalf("whole file: %d ticks, %v", got, err)
	}
	// Every cut point: the reader reports truncation (or, for a cut that happens to leave a
	// record header inside a chunk, corruption), never a clean end and never a panic.
	prev := 0
	for cut := 9; cut < len(data); cut += len(data)/400 + 1 {
		got, err := readBytes(data[:cut])
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %d ticks, %v", cut, len(data), got, err)
		}
		if got < prev || got > n {
			t.Fatalf("cut at %d: %d ticks, fewer than %d at an earlier cut", cut, got, prev)
		}
		prev = got
	}
	if prev == 0 {
		t.Fatal("no cut kept any tick: data is not read up to the cut")
	}
	_, err := readBytes(data[:len(data)/2])
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "test.mcap") {
		t.Errorf("half file: %v, want ErrTruncated naming the file", err)
	}
}

// firstRecord returns the offset of the first top-level record with opcode op.
func firstRecord(t *testing.T, data []byte, op mcap.OpCode) int {
	for at := len(mcap.Magic); at+9 <= len(data); {
		if mcap.OpCode(data[at]) == op {
			return at
		}
		at += 9 + int(binary.LittleEndian.Uint64(data[at+1:]))
	}
	t.Fatalf("no %v record", op)
	return 0
}

func TestCorruptRecording(t *testing.T) {
	data := smallRecording(t, 300)
	flip := func(at int) []byte {
		c := bytes.Clone(data)
		c[at] ^= 0x5a
		return c
	}
	chunk := firstRecord(t, data, mcap.OpChunk)
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotRecording},
		{"not mcap", []byte("PK\x03\x04 this is a zip file, not a recording"), ErrNotRecording},
		{"bad magic", flip(2), ErrNotRecording},
		{"chunk data", flip(chunk + 200), ErrCorrupt},
		{"chunk compression length", func() []byte {
			c := bytes.Clone(data)
			c[chunk+9+8+8+8+4] = 0xff // compression name length: the mcap lexer panics on this
			return c
		}(), ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// TestPartFileOfARunningRecorder reads the ".part" file a running recorder is writing, as a
// crash would leave it: every chunk already on disk reads, then ErrTruncated.
func TestPartFileOfARunningRecorder(t *testing.T) {
	dir := t.TempDir()
	r := newTestRecorder(t, Options{Dir: dir, ChunkSize: 4 << 10, RingTicks: 4096})
	defer r.Close()
	var g tickGen
	recordRange(t, r, &g, 0, 2000)
	waitFor(t, func() bool { return r.Stats().Written == 2000 })
	parts, _ := filepath.Glob(filepath.Join(dir, "*"+partSuffix))
	if len(parts) != 1 {
		t.Fatalf("part files %v", parts)
	}
	data, err := os.ReadFile(parts[0]) // bufio may hold a partial record: a real crash's cut
	if err != nil {
		t.Fatal(err)
	}
	got, err := readBytes(data)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("%d ticks then %v, want ErrTruncated", got, err)
	}
	if got < 1000 {
		t.Errorf("only %d of 2000 ticks readable from the part file", got)
	}
}

// TestPythonReader reads a recording with Python's mcap package, when the system Python has it.
func TestPythonReader(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import mcap").CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Skipf("%s cannot import mcap (%s): install Python's mcap package to run this check", python, lines[len(lines)-1])
	}
	const n = 500
	dir := t.TempDir()
	r := newTestRecorder(t, Options{Dir: dir, RingTicks: n})
	var g tickGen
	recordRange(t, r, &g, 0, n)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := Recordings(dir, "")
	script := `
import json, sys
from collections import Counter
from mcap.reader import make_reader
counts, actions = Counter(), 0
with open(sys.argv[1], "rb") as f:
    reader = make_reader(f)
    for schema, channel, message in reader.iter_messages():
        counts[channel.topic] += 1
        if channel.topic == "/link/sensor":
            assert len(message.data) == 208
        if channel.topic == "/policy/action":
            assert len(json.loads(message.data)["values"]) == 12
for topic in sorted(counts):
    print(topic, counts[topic])
`
	out, err := exec.Command(python, "-c", script, files[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := strings.Join([]string{
		TopicEvents + " " + strconv.Itoa(2*n/(5*policyEvery)),
		TopicSensor + " " + strconv.Itoa(n),
		TopicCommand + " " + strconv.Itoa(n),
		TopicAction + " " + strconv.Itoa(n/policyEvery),
		TopicObservation + " " + strconv.Itoa(n/policyEvery),
	}, "\n")
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("python read:\n%s\nwant:\n%s", got, want)
	}
}

func TestRecordingsOrder(t *testing.T) {
	dir := t.TempDir()
	names := []string{"flight-20250102T000000.000Z-000002.mcap", "flight-20250101T000000.000Z-000001.mcap",
		"flight-20250103T000000.000Z-000001.mcap.part", "other-20240101T000000.000Z-000001.mcap", "flight-notes.txt"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Recordings(dir, "flight")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, names[1]), filepath.Join(dir, names[0])}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := Recordings(filepath.Join(dir, "missing"), ""); err == nil {
		t.Error("missing directory accepted")
	}
}
