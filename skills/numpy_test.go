package skills

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// Debian's numpy belongs to /usr/bin/python3 (the python3 on PATH may lack it).
const systemPython = "/usr/bin/python3"

const numpyLoadScript = `
import hashlib, json, sys, zipfile
import numpy as np
path = sys.argv[1]
z = np.load(path)
man = json.loads(z["manifest.json"])
out = {"version": man["format_version"], "layout": man["contract"]["layout"]["name"], "keys": sorted(z.files), "arrays": {}}
with zipfile.ZipFile(path) as zf:
    for e in man["arrays"]:
        a = z[e["name"]]
        out["arrays"][e["name"]] = {
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "sum": float(a.astype(np.float64).sum()),
            "last": float(a[(-1,) * a.ndim]),
            "at_1_2": float(a[1, 2]) if a.ndim == 2 and a.shape[0] > 1 and a.shape[1] > 2 else None,
            "sha_ok": hashlib.sha256(zf.read(e["name"] + ".npy")).hexdigest() == e["sha256"],
        }
print(json.dumps(out))
`

type numpyArray struct {
	Shape []int    `json:"shape"`
	Dtype string   `json:"dtype"`
	Sum   float64  `json:"sum"`
	Last  float32  `json:"last"`
	At12  *float32 `json:"at_1_2"`
	SHAOK bool     `json:"sha_ok"`
}

func TestNumpyLoadsBank(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("numpy is not importable with %s (%v: %s); install python3-numpy to run this test", systemPython, err, out)
	}
	b := sampleBank(t, Navigation171(), 3, 2, 16, 32, 32)
	path := filepath.Join(t.TempDir(), "bank.npz")
	if err := WriteBank(path, b); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(systemPython, "-c", numpyLoadScript, path).Output()
	if err != nil {
		t.Fatalf("numpy could not load the bank: %v", err)
	}
	var got struct {
		Version int                   `json:"version"`
		Layout  string                `json:"layout"`
		Keys    []string              `json:"keys"`
		Arrays  map[string]numpyArray `json:"arrays"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if got.Version != FormatVersion || got.Layout != LayoutNavigation171 {
		t.Errorf("numpy read manifest version %d layout %q", got.Version, got.Layout)
	}
	_, arrays := b.layout()
	wantKeys := []string{ManifestMember}
	for _, a := range arrays {
		wantKeys = append(wantKeys, a.name)
	}
	slices.Sort(wantKeys)
	if !slices.Equal(got.Keys, wantKeys) {
		t.Errorf("numpy keys %v, want %v", got.Keys, wantKeys)
	}
	for _, a := range arrays {
		g, ok := got.Arrays[a.name]
		if !ok {
			t.Errorf("numpy did not load %s", a.name)
			continue
		}
		var sum float64
		for _, v := range a.data {
			sum += float64(v)
		}
		switch {
		case !slices.Equal(g.Shape, a.shape) || g.Dtype != "float32":
			t.Errorf("%s: numpy sees %v %s, want %v float32", a.name, g.Shape, g.Dtype, a.shape)
		case !g.SHAOK:
			t.Errorf("%s: SHA-256 computed by Python differs from the manifest", a.name)
		case g.Last != a.data[len(a.data)-1] || !closeTo(float32(g.Sum), sum, 1e-5):
			t.Errorf("%s: numpy values differ (last %v vs %v, sum %v vs %v)", a.name, g.Last, a.data[len(a.data)-1], g.Sum, sum)
		case g.At12 != nil && *g.At12 != a.data[1*a.shape[1]+2]:
			t.Errorf("%s: numpy [1,2] = %v, row-major data has %v", a.name, *g.At12, a.data[a.shape[1]+2])
		}
	}
	t.Logf("numpy loaded %d arrays and the manifest", len(got.Arrays))
}

// Arrays numpy writes itself (format 1.0 headers) decode too.
func TestDecodeNumpyWrittenArrays(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("numpy is not importable with %s (%v: %s); install python3-numpy to run this test", systemPython, err, out)
	}
	dir := t.TempDir()
	script := `
import sys
import numpy as np
np.save(sys.argv[1] + "/m.npy", (np.arange(6, dtype=np.float32) / 4).reshape(2, 3))
np.save(sys.argv[1] + "/v.npy", np.array([1.5, -2, 1e-30, 3e38], dtype=np.float32))
np.save(sys.argv[1] + "/d.npy", np.zeros(3))
`
	if out, err := exec.Command(systemPython, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tests := []struct {
		file  string
		shape []int
		data  []float32
	}{
		{"m.npy", []int{2, 3}, []float32{0, 0.25, 0.5, 0.75, 1, 1.25}},
		{"v.npy", []int{4}, []float32{1.5, -2, 1e-30, 3e38}},
	}
	for _, tt := range tests {
		raw, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		shape, data, err := decodeArray(raw)
		if err != nil || !slices.Equal(shape, tt.shape) || !slices.Equal(data, tt.data) {
			t.Errorf("%s: %v %v, %v; want %v %v", tt.file, shape, data, err, tt.shape, tt.data)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "d.npy"))
	if _, _, err := decodeArray(raw); err == nil {
		t.Error("a float64 array was accepted")
	}
}
