// Package datafiletest checks dataset archives with numpy, the reader the files are meant for
// outside Go: tests of the writer and of collection share it.
package datafiletest

import (
	"encoding/json"
	"math"
	"os/exec"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/trainer/datafile"
)

// SystemPython is the interpreter Debian's python3-numpy belongs to (the python3 on PATH may
// lack it).
const SystemPython = "/usr/bin/python3"

// numpyScript loads an archive with numpy.load and reports every column the manifest lists.
const numpyScript = `
import json, sys
import numpy as np
z = np.load(sys.argv[1])
man = json.loads(z["manifest.json"])
out = {"keys": sorted(z.files), "columns": {}}
for c in man["columns"]:
    a = z[c["name"]]
    out["columns"][c["name"]] = {"shape": list(a.shape), "dtype": str(a.dtype), "sum": float(a.astype(np.float64).sum())}
print(json.dumps(out))
`

// SkipWithoutNumpy skips t with a clear message when numpy cannot be imported.
func SkipWithoutNumpy(t testing.TB) {
	t.Helper()
	if out, err := exec.Command(SystemPython, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("numpy is not importable with %s (%v: %s); install python3-numpy to run this test", SystemPython, err, out)
	}
}

type report struct {
	Keys    []string `json:"keys"`
	Columns map[string]struct {
		Shape []int   `json:"shape"`
		Dtype string  `json:"dtype"`
		Sum   float64 `json:"sum"`
	} `json:"columns"`
}

type want struct {
	shape []int
	dtype string
	sum   float64
}

// CheckOffline loads the offline archive at path with numpy and checks that it reads every
// column of o: the shape, dtype and sum of each.
func CheckOffline(t testing.TB, path string, o *datafile.Offline) {
	t.Helper()
	n, d, a := o.Data.Len(), o.Data.ObsDim, o.Data.ActDim
	check(t, path, map[string]want{
		"observations":      {[]int{n, d}, "float32", sum(o.Data.Obs)},
		"actions":           {[]int{n, a}, "float32", sum(o.Data.Act)},
		"next_observations": {[]int{n, d}, "float32", sum(o.Data.NextObs)},
		"terminals":         {[]int{n}, "bool", sum(o.Data.Terminal)},
		"timeouts":          {[]int{n}, "bool", sum(o.Data.Timeout)},
		"episode_starts":    {[]int{n}, "bool", sum(o.Data.EpisodeStart)},
		"rewards":           {[]int{n}, "float32", sum(o.Withheld.Reward)},
		"is_expert":         {[]int{n}, "bool", sum(o.Withheld.IsExpert)},
		"modes":             {[]int{n}, "int32", sum(o.Withheld.Mode)},
		"base_position":     {[]int{n, 3}, "float32", sum(o.Withheld.BasePosition)},
		"base_rpy":          {[]int{n, 3}, "float32", sum(o.Withheld.BaseRPY)},
	})
}

// CheckExpert is CheckOffline for an expert archive.
func CheckExpert(t testing.TB, path string, e *datafile.Expert) {
	t.Helper()
	check(t, path, map[string]want{"observations": {[]int{e.Data.Len(), e.Data.ObsDim}, "float32", sum(e.Data.Obs)}})
}

func check(t testing.TB, path string, wants map[string]want) {
	t.Helper()
	out, err := exec.Command(SystemPython, "-c", numpyScript, path).Output()
	if err != nil {
		t.Fatalf("numpy could not load %s: %v", path, err)
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("numpy report %q: %v", out, err)
	}
	if len(r.Columns) != len(wants) {
		t.Fatalf("numpy saw columns %v", r.Keys)
	}
	for name, w := range wants {
		c, ok := r.Columns[name]
		if !ok {
			t.Fatalf("numpy has no %s (keys %v)", name, r.Keys)
		}
		if !slices.Equal(c.Shape, w.shape) || c.Dtype != w.dtype || math.Abs(c.Sum-w.sum) > 1e-3*(1+math.Abs(w.sum)) {
			t.Errorf("%s: numpy reads %v %s sum %g, want %v %s sum %g", name, c.Shape, c.Dtype, c.Sum, w.shape, w.dtype, w.sum)
		}
	}
}

func sum[T float32 | int32 | bool](x []T) float64 {
	s := 0.0
	for _, v := range x {
		switch v := any(v).(type) {
		case float32:
			s += float64(v)
		case int32:
			s += float64(v)
		case bool:
			if v {
				s++
			}
		}
	}
	return s
}
