package slider

import (
	"errors"
	"fmt"
)

// ADCMax is the largest value of the box's 10-bit analogue-to-digital converter.
const ADCMax = 1023

// MaxLineLen bounds the content of one line (terminator excluded). The longest canonical line,
// "1 1023 1023 1023 1023", has 21 bytes; the rest is slack for padding and leading zeros.
const MaxLineLen = 64

// MaxSliders is the number of slider channels a line can carry.
const MaxSliders = 4

// Reading is one decoded line.
type Reading struct {
	// EStop is true while the hardware E-stop button is pressed (wire value 0).
	EStop bool
	// Sliders holds the first N channels scaled from 0..ADCMax to [0, 1]; the rest are zero.
	Sliders [MaxSliders]float64
	// N is the number of sliders on the line: 2 or 4.
	N int
}

// ErrMalformed is wrapped by every error ParseLine returns.
var ErrMalformed = errors.New("slider: malformed line")

// Reason says why a line was rejected.
type Reason uint8

// Reasons a line can be rejected for.
const (
	ReasonEmpty      Reason = iota + 1 // nothing but a terminator or blanks
	ReasonFieldCount                   // not 3 or 5 fields
	ReasonNotNumber                    // a field holds something other than decimal digits
	ReasonOutOfRange                   // a slider value above ADCMax
	ReasonEStopValue                   // the E-stop field is a number other than 0 or 1
	ReasonTooLong                      // more than MaxLineLen bytes before the terminator
	numReasons
)

var reasonText = [numReasons]string{
	ReasonEmpty:      "empty line",
	ReasonFieldCount: "want 3 or 5 fields",
	ReasonNotNumber:  "not a decimal number",
	ReasonOutOfRange: fmt.Sprintf("value out of range 0..%d", ADCMax),
	ReasonEStopValue: "e-stop field is not 0 or 1",
	ReasonTooLong:    fmt.Sprintf("longer than %d bytes", MaxLineLen),
}

func (r Reason) String() string {
	if r == 0 || r >= numReasons {
		return fmt.Sprintf("Reason(%d)", uint8(r))
	}
	return reasonText[r]
}

// FieldNone is the field index of errors that concern the whole line.
const FieldNone = -1

const fieldsMax = 1 + MaxSliders

// LineError describes a rejected line. ParseLine hands out pointers into a fixed table so that
// rejecting garbage allocates nothing; the accessors keep that table read-only.
type LineError struct {
	reason Reason
	field  int
}

// Reason says why the line was rejected.
func (e *LineError) Reason() Reason { return e.reason }

// Field is the offending field, 0 for the E-stop and 1..4 for sliders a0..a3, or FieldNone.
func (e *LineError) Field() int { return e.field }

func (e *LineError) Error() string {
	switch {
	case e.field == 0:
		return fmt.Sprintf("%v: e-stop field: %v", ErrMalformed, e.reason)
	case e.field > 0:
		return fmt.Sprintf("%v: slider a%d: %v", ErrMalformed, e.field-1, e.reason)
	default:
		return fmt.Sprintf("%v: %v", ErrMalformed, e.reason)
	}
}

func (e *LineError) Unwrap() error { return ErrMalformed }

var lineErrors = func() (t [numReasons][fieldsMax + 1]LineError) {
	for r := range t {
		for i := range t[r] {
			t[r][i] = LineError{reason: Reason(r), field: i - 1}
		}
	}
	return t
}()

func malformed(r Reason, field int) *LineError { return &lineErrors[r][field+1] }

// ParseLine decodes one line from the box. The terminator ("\r\n" or "\n") is optional; fields
// are separated by runs of spaces or tabs. It never allocates, including on error, where it
// returns a *LineError.
func ParseLine(line []byte) (Reading, error) {
	r, lerr := parseLine(line)
	if lerr != nil {
		return Reading{}, lerr
	}
	return r, nil
}

func parseLine(line []byte) (Reading, *LineError) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > MaxLineLen {
		return Reading{}, malformed(ReasonTooLong, FieldNone)
	}

	var values [fieldsMax]int
	fields := 0
	for i := 0; i < len(line); {
		if isBlank(line[i]) {
			i++
			continue
		}
		start := i
		for i < len(line) && !isBlank(line[i]) {
			i++
		}
		if fields == fieldsMax {
			return Reading{}, malformed(ReasonFieldCount, FieldNone)
		}
		v, r := parseField(line[start:i])
		if r == ReasonOutOfRange && fields == 0 {
			r = ReasonEStopValue
		}
		if r != 0 {
			return Reading{}, malformed(r, fields)
		}
		values[fields] = v
		fields++
	}

	switch fields {
	case 0:
		return Reading{}, malformed(ReasonEmpty, FieldNone)
	case 3, 5:
	default:
		return Reading{}, malformed(ReasonFieldCount, FieldNone)
	}
	if values[0] > 1 {
		return Reading{}, malformed(ReasonEStopValue, 0)
	}
	rd := Reading{EStop: values[0] == 0, N: fields - 1}
	for i := range rd.N {
		rd.Sliders[i] = float64(values[i+1]) / ADCMax
	}
	return rd, nil
}

// parseField reads an unsigned decimal no larger than ADCMax; leading zeros are allowed.
func parseField(f []byte) (int, Reason) {
	v := 0
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, ReasonNotNumber
		}
		if v <= ADCMax {
			v = v*10 + int(c-'0')
		}
	}
	if v > ADCMax {
		return 0, ReasonOutOfRange
	}
	return v, 0
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }
