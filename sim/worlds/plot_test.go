package worlds

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteTopDownPNG(t *testing.T) {
	s, err := Builtin("obstacle_fenced")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Layout(4)
	var path []Point2
	for i := range 200 {
		x := 2.2 * float64(i) / 199
		path = append(path, Point2{x, 0.1 * math.Sin(3*x)})
	}
	path = append(path, Point2{math.NaN(), 0}) // a diverged sample is skipped, not drawn
	file := filepath.Join(t.TempDir(), "episode.png")
	if err := WriteTopDownPNG(file, l, path, "obstacle_fenced seed 4"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != b.Dy() || b.Dx() < 400 {
		t.Fatalf("image %v, want a square of at least 400 px", b)
	}
	// Every element's colour is somewhere in the picture.
	want := map[string][3]uint32{"box": rgb(boxColor.R, boxColor.G, boxColor.B), "fence": rgb(fenceColor.R, fenceColor.G, fenceColor.B), "path": rgb(pathColor.R, pathColor.G, pathColor.B)}
	for name, c := range want {
		found := false
		for y := b.Min.Y; y < b.Max.Y && !found; y++ {
			for x := b.Min.X; x < b.Max.X && !found; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				found = [3]uint32{r >> 8, g >> 8, bl >> 8} == c
			}
		}
		if !found {
			t.Errorf("no %s-coloured pixel in the plot", name)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the PNG (no temp files)", len(entries))
	}
}

func rgb(r, g, b uint8) [3]uint32 { return [3]uint32{uint32(r), uint32(g), uint32(b)} }

func TestWriteTopDownPNGBadDir(t *testing.T) {
	l := &Layout{Name: "flat"}
	if err := WriteTopDownPNG(filepath.Join(t.TempDir(), "missing", "x.png"), l, nil, ""); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
