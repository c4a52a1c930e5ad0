package slider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseLineValid(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Reading
	}{
		{"two sliders crlf", "1 0 1023\r\n", Reading{Sliders: [4]float64{0, 1}, N: 2}},
		{"two sliders lf", "1 1023 0\n", Reading{Sliders: [4]float64{1, 0}, N: 2}},
		{"no terminator", "1 0 0", Reading{N: 2}},
		{"pressed", "0 0 0\r\n", Reading{EStop: true, N: 2}},
		{"four sliders", "1 0 341 682 1023\r\n",
			Reading{Sliders: [4]float64{0, 341.0 / 1023, 682.0 / 1023, 1}, N: 4}},
		{"four pressed", "0 1 2 3 4\n",
			Reading{EStop: true, Sliders: [4]float64{1.0 / 1023, 2.0 / 1023, 3.0 / 1023, 4.0 / 1023}, N: 4}},
		{"leading zeros", "01 0001 001023\r\n", Reading{Sliders: [4]float64{1.0 / 1023, 1}, N: 2}},
		{"blank runs and tabs", "  1\t 512 \t 511  \r\n",
			Reading{Sliders: [4]float64{512.0 / 1023, 511.0 / 1023}, N: 2}},
		{"longest allowed", strings.Repeat(" ", MaxLineLen-5) + "1 0 0\r\n", Reading{N: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tt.line))
			if err != nil {
				t.Fatalf("ParseLine(%q): %v", tt.line, err)
			}
			if got != tt.want {
				t.Fatalf("ParseLine(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestParseLineMalformed(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		reason Reason
		field  int
	}{
		{"nothing", "", ReasonEmpty, FieldNone},
		{"bare crlf", "\r\n", ReasonEmpty, FieldNone},
		{"bare lf", "\n", ReasonEmpty, FieldNone},
		{"blanks only", " \t \r\n", ReasonEmpty, FieldNone},
		{"one field", "1\r\n", ReasonFieldCount, FieldNone},
		{"two fields", "1 512\r\n", ReasonFieldCount, FieldNone},
		{"four fields", "1 1 2 3\r\n", ReasonFieldCount, FieldNone},
		{"six fields", "1 1 2 3 4 5\r\n", ReasonFieldCount, FieldNone},
		{"many fields", "1 1 2 3 4 5 6 7 8 9\r\n", ReasonFieldCount, FieldNone},
		{"letters in estop", "x 1 2\r\n", ReasonNotNumber, 0},
		{"letters in a1", "1 1 2a\r\n", ReasonNotNumber, 2},
		{"negative", "1 -1 2\r\n", ReasonNotNumber, 1},
		{"plus sign", "1 +1 2\r\n", ReasonNotNumber, 1},
		{"decimal point", "1 1.5 2 3 4\r\n", ReasonNotNumber, 1},
		{"comma separated", "1,2,3\r\n", ReasonNotNumber, 0},
		{"stray carriage return", "1 2\r3 4\r\n", ReasonNotNumber, 1},
		{"double crlf", "1 2 3\r\r\n", ReasonNotNumber, 2},
		{"nul byte", "1 2 3\x00\r\n", ReasonNotNumber, 2},
		{"high byte", "1 2 \xff3\r\n", ReasonNotNumber, 2},
		{"a0 1024", "1 1024 0\r\n", ReasonOutOfRange, 1},
		{"a3 huge", "1 0 0 0 99999999999999999999999\r\n", ReasonOutOfRange, 4},
		{"estop 2", "2 0 0\r\n", ReasonEStopValue, 0},
		{"estop 1023", "1023 0 0\r\n", ReasonEStopValue, 0},
		{"estop huge", "99999999 0 0\r\n", ReasonEStopValue, 0},
		{"one byte too long", strings.Repeat(" ", MaxLineLen-4) + "1 0 0\r\n", ReasonTooLong, FieldNone},
		{"very long", strings.Repeat("1 0 0 ", 100) + "\n", ReasonTooLong, FieldNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tt.line))
			if err == nil {
				t.Fatalf("ParseLine(%q) = %+v, want error", tt.line, got)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.Reason() != tt.reason || le.Field() != tt.field {
				t.Fatalf("ParseLine(%q): reason %v field %d, want %v field %d (%v)",
					tt.line, le.Reason(), le.Field(), tt.reason, tt.field, err)
			}
			if got != (Reading{}) {
				t.Fatalf("rejected line returned non-zero reading %+v", got)
			}
		})
	}
}

func TestLineErrorText(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"", "slider: malformed line: empty line"},
		{"7 1 2", "slider: malformed line: e-stop field: e-stop field is not 0 or 1"},
		{"1 1 2000", "slider: malformed line: slider a1: value out of range 0..1023"},
		{"1 1", "slider: malformed line: want 3 or 5 fields"},
	}
	for _, tt := range tests {
		_, err := ParseLine([]byte(tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseLine(%q) error = %v, want %q", tt.line, err, tt.want)
		}
	}
	if got := Reason(0).String(); got != "Reason(0)" {
		t.Errorf("Reason(0).String() = %q", got)
	}
}

func TestParseLineAllocatesNothing(t *testing.T) {
	for _, line := range []string{"1 512 513 514 515\r\n", "1 2000 0\r\n", "garbage\r\n", ""} {
		b := []byte(line)
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseLine(b) }); n != 0 {
			t.Errorf("ParseLine(%q): %v allocations per call, want 0", line, n)
		}
	}
}

// formatReading writes the canonical line for r, so a fuzzed reading can be round-tripped.
func formatReading(r Reading) string {
	var sb strings.Builder
	estop := 1
	if r.EStop {
		estop = 0
	}
	fmt.Fprintf(&sb, "%d", estop)
	for i := range r.N {
		fmt.Fprintf(&sb, " %.0f", r.Sliders[i]*ADCMax)
	}
	sb.WriteString("\r\n")
	return sb.String()
}

func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		"1 0 1023\r\n", "0 512 512\n", "1 1 2 3 4\r\n", "0 0 0 0 0", "01 001 1023",
		"", "\r\n", "1 1024 0\r\n", "2 0 0\r\n", "1 a b\r\n", "1 1 2 3\r\n", "1 -5 3\r\n",
		"\t1\t2\t3\t", strings.Repeat("9", 80), "1 2\r3 4\r\n", "1 2 3 4 5 6\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseLine(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if r != (Reading{}) {
				t.Fatalf("rejected line returned %+v", r)
			}
			return
		}
		if r.N != 2 && r.N != 4 {
			t.Fatalf("N = %d", r.N)
		}
		for i, v := range r.Sliders {
			if i >= r.N && v != 0 || v < 0 || v > 1 {
				t.Fatalf("slider %d = %v with N = %d", i, v, r.N)
			}
		}
		again, err := ParseLine([]byte(formatReading(r)))
		if err != nil || again != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, again, err)
		}
	})
}

func BenchmarkParseLine(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"two", "1 512 1023\r\n"},
		{"four", "1 512 1023 0 777\r\n"},
		{"garbage", "1 512 x\r\n"},
	} {
		line := []byte(bc.line)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := ParseLine(line); err != nil && bc.name != "garbage" {
					b.Fatal(err)
				}
			}
		})
	}
}
