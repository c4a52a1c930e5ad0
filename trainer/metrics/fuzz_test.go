package metrics

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLogReaders feeds arbitrary files to ReadSeries and Resume: an error or
// a result, never a panic; a resumed log holds only lines ReadSeries accepts.
func FuzzLogReaders(f *testing.F) {
	f.Add([]byte(`{"iteration":1,"loss":0.5,"ess":null}`+"\n"+`{"iteration":2,"loss":1}`+"\n"), 1)
	f.Add([]byte(`{"iteration":1e400}`), 0)
	f.Add([]byte("[1,2]\n{\"iteration\":\"3\"}\n"), 5)
	f.Add([]byte(`{"iteration":1,"loss":true}`+"\n"), 2)
	f.Fuzz(func(t *testing.T, content []byte, upto int) {
		path := filepath.Join(t.TempDir(), "m.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = ReadSeries(path, "loss", "ess")
		l, err := Resume(path, upto)
		if err != nil {
			return
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSeries(path)
		if err != nil {
			t.Fatalf("log kept by Resume does not read: %v", err)
		}
		for _, it := range s.Iteration {
			if it > float64(upto) {
				t.Fatalf("Resume(%d) kept iteration %v", upto, it)
			}
		}
	})
}
