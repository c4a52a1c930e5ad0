package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type record struct {
	Iteration int `json:"iteration"`
	Loss      Num `json:"loss"`
	ESS       Num `json:"ess"`
}

func TestNumEncoding(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1.5, "1.5"}, {-2e-9, "-2e-09"}, {1e21, "1e+21"}, {0.1, "0.1"},
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
		{math.Float64frombits(0x3fd5555555555555), "0.3333333333333333"},
	}
	for _, tc := range tests {
		b, err := json.Marshal(Num(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, b, err, tc.want)
		}
		var back Num
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if f := float64(back); f != tc.in && !(math.IsNaN(f) && (math.IsNaN(tc.in) || math.IsInf(tc.in, 0))) {
			t.Errorf("round trip of %v gave %v", tc.in, f)
		}
	}
	var n Num
	if err := json.Unmarshal([]byte(`"x"`), &n); err == nil {
		t.Error("a string decoded as a number")
	}
}

func writeLog(t *testing.T, path string, its ...int) {
	t.Helper()
	l, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if err := l.Write(record{Iteration: it, Loss: Num(float64(it) / 2), ESS: Num(math.NaN())}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLogLinesAndSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	writeLog(t, path, 1, 2, 3)
	b, _ := os.ReadFile(path)
	want := `{"iteration":1,"loss":0.5,"ess":null}` + "\n" +
		`{"iteration":2,"loss":1,"ess":null}` + "\n" +
		`{"iteration":3,"loss":1.5,"ess":null}` + "\n"
	if string(b) != want {
		t.Fatalf("log:\n%s\nwant:\n%s", b, want)
	}
	s, err := ReadSeries(path, "loss", "ess", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Iteration) != 3 || s.Iteration[2] != 3 || s.Values["loss"][1] != 1 ||
		!math.IsNaN(s.Values["ess"][0]) || !math.IsNaN(s.Values["absent"][2]) {
		t.Fatalf("series %+v", s)
	}
	// The run is writing line 4: it is not read, and no column holds part of it.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"iteration":4,"loss":"`)
	f.Close()
	s, err = ReadSeries(path, "loss", "ess")
	if err != nil || len(s.Iteration) != 3 || len(s.Values["loss"]) != 3 || len(s.Values["ess"]) != 3 {
		t.Fatalf("series of a log being written: %+v, %v", s, err)
	}
}

func TestResumeCutsAtTheCheckpoint(t *testing.T) {
	tests := []struct {
		name  string
		tail  string // appended after lines 1..5
		upto  int
		after []int // lines appended after resuming
		want  []float64
		err   error
	}{
		{"cut", "", 3, []int{4, 5}, []float64{1, 2, 3, 4, 5}, nil},
		{"keep all", "", 9, []int{6}, []float64{1, 2, 3, 4, 5, 6}, nil},
		{"line torn by a crash", `{"iteration":6,"lo`, 5, []int{6}, []float64{1, 2, 3, 4, 5, 6}, nil},
		{"garbage inside", "junk\n" + `{"iteration":7}` + "\n", 5, nil, nil, ErrMalformed},
		{"null iteration", `{"iteration":null}` + "\n", 5, nil, nil, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.jsonl")
			writeLog(t, path, 1, 2, 3, 4, 5)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(tc.tail)
			f.Close()
			l, err := Resume(path, tc.upto)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resume = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range tc.after {
				l.Write(record{Iteration: it})
			}
			l.Close()
			s, err := ReadSeries(path)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(s.Iteration, tc.want) {
				t.Fatalf("iterations %v, want %v", s.Iteration, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "new.jsonl")
	l, err := Resume(path, 10)
	if err != nil {
		t.Fatalf("Resume of a missing log: %v", err)
	}
	l.Close()
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWritePNG(t *testing.T) {
	dir := t.TempDir()
	n := 5000 // thinned to maxPoints
	x, y, z := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], y[i], z[i] = float64(i), math.Sin(float64(i)/300), math.NaN()
	}
	y[17] = math.Inf(1)
	path := filepath.Join(dir, "fig.png")
	err := WritePNG(path, "iteration",
		Panel{Title: "losses", YLabel: "loss", Lines: []Line{{Name: "sin", X: x, Y: y}, {Name: "cos", X: x[:10], Y: y[:10]}}},
		Panel{Title: "all NaN", Lines: []Line{{Name: "nan", X: x, Y: z}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 2*b.Dx()/3 {
		t.Fatalf("figure is %v", b)
	}
	if err := WritePNG(filepath.Join(dir, "empty.png"), "x"); err == nil {
		t.Fatal("figure without panels written")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries (temporary files left?)", len(entries))
	}
}

func TestThin(t *testing.T) {
	x := make([]float64, 3*maxPoints)
	for i := range x {
		x[i] = float64(i)
	}
	got := thin(x, x)
	if len(got) != maxPoints || got[0].X != 1 || got[0].Y != 1 {
		t.Fatalf("thinned to %d points, first %v", len(got), got[0])
	}
	if got := thin([]float64{1, 2}, []float64{math.NaN(), 3}); len(got) != 1 || got[0].X != 2 {
		t.Fatalf("thin dropped the wrong points: %v", got)
	}
}

func TestBar(t *testing.T) {
	var nilBar *Bar
	nilBar.Set(3) // a silent bar is a no-op
	nilBar.Describe("x")
	nilBar.Finish()
	if b := NewBar(&bytes.Buffer{}, 10, 0, "train", false); b != nil {
		t.Fatal("bar drawn on a non-terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b := NewBar(f, 10, 0, "train", false); b != nil {
		t.Fatal("bar drawn into a regular file")
	}
	var buf bytes.Buffer
	b := newBar(&buf, 10, 4, "train")
	b.Set(7)
	b.Describe("KL 0.5")
	b.Finish()
	if out := buf.String(); !strings.Contains(out, "10/10") || !strings.Contains(out, "KL 0.5") {
		t.Fatalf("bar output %q", out)
	}
}

func TestColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	log := `{"iteration":1,"loss":0.5,"ess":null,"name":"a","mass":{"x":1},"phi_0":1}` + "\n\n" +
		`{"iteration":2,"loss":1,"flag":true,"phi_1":2}` + "\n" +
		`{"iteration":3,"loss":"oops","ess":3}` + "\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Columns(path)
	if err != nil {
		t.Fatal(err)
	}
	// loss turned to a string on line 3: not a column; name, mass and flag never were.
	if want := []string{"ess", "phi_0", "phi_1"}; !slices.Equal(got, want) {
		t.Fatalf("columns %q, want %q", got, want)
	}
	// A last line cut short (a run writing, or one that crashed) is dropped,
	// as ReadSeries and Resume drop it; a bad line inside is an error.
	if err := os.WriteFile(path, []byte("{\"iteration\":1,\"loss\":1}\n{\"iteration\":2,\"lo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Columns(path); err != nil || !slices.Equal(got, []string{"loss"}) {
		t.Fatalf("cut log: columns %q, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("{\"iteration\":1}\n{cut\n{\"iteration\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Columns(path); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("log with a bad line inside: %v", err)
	}
}
