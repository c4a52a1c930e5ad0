package skills

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills/npz"
)

// Debian's numpy belongs to /usr/bin/python3 (the python3 on PATH may lack it).
const systemPython = "/usr/bin/python3"

const numpyLoadScript = `
import hashlib, json, sys, zipfile
import numpy as np
path = sys.argv[1]
z = np.load(path)
fin = lambda v: None if np.isnan(v) else float(v)
man = json.loads(z["manifest.json"])
out = {"version": man["format_version"], "layout": man["contract"]["layout"]["name"], "keys": sorted(z.files), "arrays": {}}
with zipfile.ZipFile(path) as zf:
    for e in man["arrays"]:
        a = z[e["name"]]
        out["arrays"][e["name"]] = {
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "sum": float(np.nansum(a.astype(np.float64))),
            "nans": int(np.isnan(a.astype(np.float64)).sum()),
            "last": fin(a[(-1,) * a.ndim]),
            "at_1_2": fin(a[1, 2]) if a.ndim == 2 and a.shape[0] > 1 and a.shape[1] > 2 else None,
            "sha_ok": hashlib.sha256(zf.read(e["name"] + ".npy")).hexdigest() == e["sha256"],
        }
print(json.dumps(out))
`

type numpyArray struct {
	Shape []int    `json:"shape"`
	Dtype string   `json:"dtype"`
	Sum   float64  `json:"sum"`
	NaNs  int      `json:"nans"`
	Last  *float64 `json:"last"`
	At12  *float64 `json:"at_1_2"`
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
		vals := float64s(a.data)
		var sum float64
		var nans int
		for _, v := range vals {
			if math.IsNaN(v) {
				nans++
			} else {
				sum += v
			}
		}
		numpyType := map[string]string{npz.DtypeFloat32: "float32", npz.DtypeFloat64: "float64", npz.DtypeInt32: "int32"}[dtypeOf(a.data)]
		same := func(got *float64, want float64) bool {
			return (got == nil && math.IsNaN(want)) || (got != nil && *got == want)
		}
		switch {
		case !slices.Equal(g.Shape, a.shape) || g.Dtype != numpyType:
			t.Errorf("%s: numpy sees %v %s, want %v %s", a.name, g.Shape, g.Dtype, a.shape, numpyType)
		case !g.SHAOK:
			t.Errorf("%s: SHA-256 computed by Python differs from the manifest", a.name)
		case !same(g.Last, vals[len(vals)-1]) || g.NaNs != nans || math.Abs(g.Sum-sum) > 1e-5*(1+math.Abs(sum)):
			t.Errorf("%s: numpy values differ (last %v vs %v, sum %v vs %v, %d vs %d NaN)", a.name, g.Last, vals[len(vals)-1], g.Sum, sum, g.NaNs, nans)
		case g.At12 != nil && !same(g.At12, vals[1*a.shape[1]+2]):
			t.Errorf("%s: numpy [1,2] = %v, row-major data has %v", a.name, *g.At12, vals[a.shape[1]+2])
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
np.save(sys.argv[1] + "/d.npy", np.array([0.1, -1e300]))
np.save(sys.argv[1] + "/i.npy", np.array([[-1, 0, 2**31 - 1]], dtype=np.int32))
np.save(sys.argv[1] + "/l.npy", np.zeros(3, dtype=np.int64))
`
	if out, err := exec.Command(systemPython, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tests := []struct {
		file  string
		dtype string
		shape []int
		data  any
	}{
		{"m.npy", npz.DtypeFloat32, []int{2, 3}, []float32{0, 0.25, 0.5, 0.75, 1, 1.25}},
		{"v.npy", npz.DtypeFloat32, []int{4}, []float32{1.5, -2, 1e-30, 3e38}},
		{"d.npy", npz.DtypeFloat64, []int{2}, []float64{0.1, -1e300}},
		{"i.npy", npz.DtypeInt32, []int{1, 3}, []int32{-1, 0, math.MaxInt32}},
	}
	for _, tt := range tests {
		raw, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		shape, data, err := decodeArray(raw, tt.dtype)
		if err != nil || !slices.Equal(shape, tt.shape) || !reflect.DeepEqual(data, tt.data) {
			t.Errorf("%s: %v %v, %v; want %v %v", tt.file, shape, data, err, tt.shape, tt.data)
		}
	}
	for file, dtype := range map[string]string{"l.npy": npz.DtypeInt32, "d.npy": npz.DtypeFloat32, "m.npy": npz.DtypeInt32} {
		raw, _ := os.ReadFile(filepath.Join(dir, file))
		if _, _, err := decodeArray(raw, dtype); err == nil {
			t.Errorf("%s was accepted as %s", file, dtype)
		}
	}
}

// float64s converts a []float32, []float64 or []int32 to float64 values.
func float64s(data any) []float64 {
	v := reflect.ValueOf(data)
	out := make([]float64, v.Len())
	for i := range out {
		switch x := v.Index(i); x.Kind() {
		case reflect.Int32:
			out[i] = float64(x.Int())
		default:
			out[i] = x.Float()
		}
	}
	return out
}
