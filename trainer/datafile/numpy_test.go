package datafile

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/npz"
)

// Debian's numpy belongs to /usr/bin/python3 (the python3 on PATH may lack it).
const systemPython = "/usr/bin/python3"

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

type numpyReport struct {
	Keys    []string `json:"keys"`
	Columns map[string]struct {
		Shape []int   `json:"shape"`
		Dtype string  `json:"dtype"`
		Sum   float64 `json:"sum"`
	} `json:"columns"`
}

func numpyLoad(t *testing.T, path string) numpyReport {
	t.Helper()
	out, err := exec.Command(systemPython, "-c", numpyScript, path).Output()
	if err != nil {
		t.Fatalf("numpy could not load %s: %v", path, err)
	}
	var r numpyReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("numpy report %q: %v", out, err)
	}
	return r
}

func sum[T npz.Element](x []T) float64 {
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

func TestNumpyLoadsArchives(t *testing.T) {
	if out, err := exec.Command(systemPython, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("numpy is not importable with %s (%v: %s); install python3-numpy to run this test", systemPython, err, out)
	}
	o := sample(t, skills.Navigation171(), 14)
	dir := t.TempDir()
	path := filepath.Join(dir, "nav.npz")
	if err := WriteOffline(path, o); err != nil {
		t.Fatal(err)
	}
	n, d := 14, 171
	type want struct {
		shape []int
		dtype string
		sum   float64
	}
	wants := map[string]want{
		"observations":      {[]int{n, d}, "float32", sum(o.Data.Obs)},
		"actions":           {[]int{n, 12}, "float32", sum(o.Data.Act)},
		"next_observations": {[]int{n, d}, "float32", sum(o.Data.NextObs)},
		"terminals":         {[]int{n}, "bool", sum(o.Data.Terminal)},
		"timeouts":          {[]int{n}, "bool", sum(o.Data.Timeout)},
		"episode_starts":    {[]int{n}, "bool", sum(o.Data.EpisodeStart)},
		"rewards":           {[]int{n}, "float32", sum(o.Withheld.Reward)},
		"is_expert":         {[]int{n}, "bool", sum(o.Withheld.IsExpert)},
		"modes":             {[]int{n}, "int32", sum(o.Withheld.Mode)},
		"base_position":     {[]int{n, 3}, "float32", sum(o.Withheld.BasePosition)},
		"base_rpy":          {[]int{n, 3}, "float32", sum(o.Withheld.BaseRPY)},
	}
	check := func(r numpyReport, wants map[string]want) {
		t.Helper()
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
	check(numpyLoad(t, path), wants)

	e := expertOf(o)
	epath := ExpertPath(path)
	if err := WriteExpert(epath, e); err != nil {
		t.Fatal(err)
	}
	check(numpyLoad(t, epath), map[string]want{"observations": {[]int{7, d}, "float32", sum(e.Data.Obs)}})
}
