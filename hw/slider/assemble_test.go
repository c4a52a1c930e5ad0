package slider

import (
	"slices"
	"strings"
	"testing"
)

const tooLongMark = "<too long>"

// assemble runs the stream through a lineAssembler in chunks of the given sizes (cycled).
func assemble(stream []byte, chunks []int) []string {
	var asm lineAssembler
	var lines []string
	for i := 0; len(stream) > 0; i++ {
		k := min(max(chunks[i%len(chunks)], 1), len(stream))
		p := stream[:k]
		stream = stream[k:]
		for len(p) > 0 {
			used, line, tooLong, ended := asm.next(p)
			p = p[used:]
			switch {
			case tooLong:
				lines = append(lines, tooLongMark)
			case ended:
				lines = append(lines, string(line))
			}
		}
	}
	return lines
}

// referenceLines is what assemble must produce: every newline-terminated line after the first,
// with lines that overflow the buffer replaced by a mark.
func referenceLines(stream []byte) []string {
	parts := strings.Split(string(stream), "\n")
	if len(parts) < 2 {
		return nil
	}
	var lines []string
	for _, p := range parts[1 : len(parts)-1] { // first is partial, last is unterminated
		if len(p) > MaxLineLen+1 {
			p = tooLongMark
		}
		lines = append(lines, p)
	}
	return lines
}

func TestLineAssembler(t *testing.T) {
	long := strings.Repeat("x", MaxLineLen+2)
	tests := []struct {
		name   string
		stream string
		chunks []int
		want   []string
	}{
		{"drops partial first line", "0 30 40\r\n1 1 2\r\n", []int{100}, []string{"1 1 2\r"}},
		{"drops first line even when whole", "1 1 2\n1 3 4\n", []int{100}, []string{"1 3 4"}},
		{"byte by byte", "x\n1 1 2\r\n1 3 4\r\n", []int{1}, []string{"1 1 2\r", "1 3 4\r"}},
		{"unterminated tail kept back", "x\n1 1 2\r\n1 3", []int{4}, []string{"1 1 2\r"}},
		{"empty lines", "x\n\n\r\n", []int{2}, []string{"", "\r"}},
		{"longest line fits", "x\n" + strings.Repeat("y", MaxLineLen) + "\r\n", []int{7},
			[]string{strings.Repeat("y", MaxLineLen) + "\r"}},
		{"over-long line skipped to newline", "x\n" + long + "\n1 1 2\n", []int{3, 50},
			[]string{tooLongMark, "1 1 2"}},
		{"huge over-long line", "x\n" + strings.Repeat(long, 50) + "\n1 1 2\n", []int{512},
			[]string{tooLongMark, "1 1 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assemble([]byte(tt.stream), tt.chunks)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("lines = %q, want %q", got, tt.want)
			}
			if ref := referenceLines([]byte(tt.stream)); !slices.Equal(ref, tt.want) {
				t.Fatalf("reference = %q, want %q (test table is wrong)", ref, tt.want)
			}
		})
	}
}

func FuzzLineAssembler(f *testing.F) {
	f.Add([]byte("0 1 2\r\n1 1 2\r\n"), uint8(1), uint8(3))
	f.Add([]byte("junk\n"+strings.Repeat("z", 200)+"\n1 2 3\n\n"), uint8(64), uint8(1))
	f.Add([]byte("no newline at all"), uint8(5), uint8(5))
	f.Fuzz(func(t *testing.T, stream []byte, c1, c2 uint8) {
		got := assemble(stream, []int{int(c1), int(c2)})
		if want := referenceLines(stream); !slices.Equal(got, want) {
			t.Fatalf("chunks %d,%d: lines = %q, want %q", c1, c2, got, want)
		}
	})
}
