package datafile

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/dataset"
)

func TestRoundTrip(t *testing.T) {
	for _, l := range []skills.Layout{skills.Locomotion48(), skills.Navigation171()} {
		t.Run(l.Name, func(t *testing.T) {
			dir := t.TempDir()
			o := sample(t, l, 10)
			path := filepath.Join(dir, "set.npz")
			if err := WriteOffline(path, o); err != nil {
				t.Fatal(err)
			}
			got, err := ReadOffline(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, o.Data) || !reflect.DeepEqual(got.Withheld, o.Withheld) {
				t.Fatal("offline archive changed on the round trip")
			}
			if !reflect.DeepEqual(got.Manifest, o.Manifest) {
				t.Fatalf("manifest changed:\n%+v\n%+v", got.Manifest, o.Manifest)
			}
			if len(got.Manifest.Columns) != 11 {
				t.Fatalf("manifest documents %d columns", len(got.Manifest.Columns))
			}
			e := expertOf(o)
			epath := ExpertPath(path)
			if filepath.Base(epath) != "set_expert.npz" {
				t.Fatalf("expert path %s", epath)
			}
			if err := WriteExpert(epath, e); err != nil {
				t.Fatal(err)
			}
			ge, err := ReadExpert(epath)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ge.Data, e.Data) {
				t.Fatal("expert archive changed on the round trip")
			}
			if err := dataset.CheckPair(&got.Data, &ge.Data); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadOffline(epath); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "kind") {
				t.Fatalf("reading an expert archive as offline: %v", err)
			}
			for p, kind := range map[string]string{path: KindOffline, epath: KindExpert} {
				if m, err := ReadManifest(p); err != nil || m.Kind != kind || m.Transitions == 0 {
					t.Fatalf("ReadManifest(%s) = %+v, %v", p, m, err)
				}
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
				t.Fatalf("archive mode %v, %v; want 0644", st.Mode(), err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				t.Fatalf("directory holds %d entries, want the two archives only (no temp files)", len(entries))
			}
		})
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *Offline)
	}{
		{"mode label out of range", func(o *Offline) { o.Withheld.Mode[3] = 5 }},
		{"expert flag disagrees with mode", func(o *Offline) { o.Withheld.IsExpert[0] = false }},
		{"manifest count", func(o *Offline) { o.Manifest.Transitions++ }},
		{"short rewards", func(o *Offline) { o.Withheld.Reward = o.Withheld.Reward[1:] }},
		{"action out of range", func(o *Offline) { o.Data.Act[0] = 2 }},
		{"wrong width for the contract", func(o *Offline) { o.Manifest.Contract = contract(t, skills.Navigation171()) }},
		{"gain above the link ceiling", func(o *Offline) { o.Manifest.Contract.Kp = 9 }},
		{"repeated mode name", func(o *Offline) { o.Manifest.Modes[1].Name = "expert" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := sample(t, skills.Locomotion48(), 8)
			tc.edit(o)
			path := filepath.Join(t.TempDir(), "x.npz")
			err := WriteOffline(path, o)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
			t.Log(err)
			if _, serr := os.Stat(path); !os.IsNotExist(serr) {
				t.Fatal("an invalid archive was written")
			}
		})
	}
}

// encode returns the bytes of a valid archive.
func encode(t testing.TB, o *Offline) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.npz")
	if err := WriteOffline(path, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rezip rebuilds an archive from src with edit applied to each member's bytes (nil drops it).
func rezip(t testing.TB, src []byte, edit func(name string, data []byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		data := edit(f.Name, b.Bytes())
		if data == nil {
			continue
		}
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		w.Write(data)
	}
	zw.Close()
	return buf.Bytes()
}

func TestMalformedArchives(t *testing.T) {
	good := encode(t, sample(t, skills.Locomotion48(), 8))
	member := func(name string, f func([]byte) []byte) func(string, []byte) []byte {
		return func(n string, b []byte) []byte {
			if n == name || n == name+".npy" {
				return f(b)
			}
			return b
		}
	}
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "zip"},
		{"truncated to half", good[:len(good)/2], "zip"},
		{"truncated by one byte", good[:len(good)-1], "zip"},
		{"not a zip", []byte("observations,actions\n1,2\n"), "zip"},
		{"flipped data byte", flipByte(good, bytes.Index(good, []byte("NUMPY"))+200), "checksum"},
		{"no manifest", rezip(t, good, member(memberManifest, func([]byte) []byte { return nil })), "no manifest.json"},
		{"manifest not JSON", rezip(t, good, member(memberManifest, func([]byte) []byte { return []byte("{") })), "manifest"},
		{"manifest unknown field", rezip(t, good, member(memberManifest, replace(`"task"`, `"tusk"`))), "unknown field"},
		{"format version 2", rezip(t, good, member(memberManifest, replace(`"format_version": 1`, `"format_version": 2`))), "format version 2"},
		{"unknown route", rezip(t, good, member(memberManifest, replace(`"falls"`, `"routes": {"under": 1}, "falls"`))), `route "under"`},
		{"negative route count", rezip(t, good, member(memberManifest, replace(`"falls"`, `"routes": {"left": -1}, "falls"`))), `route "left"`},
		{"more routes than episodes", rezip(t, good, member(memberManifest, replace(`"falls"`, `"routes": {"left": 100}, "falls"`))), "100 by route"},
		{"no actions", rezip(t, good, member(memberAct, func([]byte) []byte { return nil })), "no actions.npy"},
		{"actions truncated", rezip(t, good, member(memberAct, func(b []byte) []byte { return b[:len(b)-4] })), "needs"},
		{"actions padded", rezip(t, good, member(memberAct, func(b []byte) []byte { return append(b, 0, 0, 0, 0) })), "needs"},
		{"actions as float64", rezip(t, good, member(memberAct, replace("<f4", "<f8"))), "array is <f8 [8 12], want <f4"},
		{"actions fortran order", rezip(t, good, member(memberAct, replace("False", "True "))), "unsupported .npy header"},
		{"actions wrong shape", rezip(t, good, member(memberAct, replace("(8, 12)", "(12, 8)"))), "want <f4 [8 12]"},
		{"terminals as float", rezip(t, good, member(memberTerminals, replace("|b1", "<f4"))), "want |b1"},
		{"no npy magic", rezip(t, good, member(memberModes, func(b []byte) []byte { return append([]byte("XX"), b[2:]...) })), "magic"},
		{"npy version 4", rezip(t, good, member(memberModes, func(b []byte) []byte { c := bytes.Clone(b); c[6] = 4; return c })), "version 4.0"},
		{"header length past the member", rezip(t, good, member(memberModes, func(b []byte) []byte { c := bytes.Clone(b[:20]); c[8], c[9] = 0xff, 0x0f; return c })), "truncated .npy header"},
		{"huge header length", rezip(t, good, member(memberModes, func(b []byte) []byte { c := bytes.Clone(b); c[8], c[9] = 0xff, 0xff; return c })), "header of"},
		{"NaN observation", rezip(t, good, member(memberObs, func(b []byte) []byte {
			c := bytes.Clone(b)
			copy(c[len(c)-4:], []byte{0, 0, 0xc0, 0x7f})
			return c
		})), "NaN"},
		{"mode label past the modes", rezip(t, good, member(memberModes, func(b []byte) []byte { c := bytes.Clone(b); c[len(c)-4] = 9; return c })), "modes[7] = 9"},
		{"no initial state", rezip(t, good, member(memberStarts, func(b []byte) []byte {
			c := bytes.Clone(b)
			for i := len(c) - 8; i < len(c); i++ {
				c[i] = 0
			}
			return c
		})), "episode_start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.npz")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadOffline(path)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrFormat mentioning %q", err, tc.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
	if _, err := ReadOffline(filepath.Join(t.TempDir(), "missing.npz")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func flipByte(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}
