package datafile_test

import (
	"path/filepath"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
)

func TestNumpyLoadsArchives(t *testing.T) {
	datafiletest.SkipWithoutNumpy(t)
	o := datafile.Sample(t, skills.Navigation171(), 14)
	path := filepath.Join(t.TempDir(), "nav.npz")
	if err := datafile.WriteOffline(path, o); err != nil {
		t.Fatal(err)
	}
	datafiletest.CheckOffline(t, path, o)
	e := datafile.ExpertOf(o)
	epath := datafile.ExpertPath(path)
	if err := datafile.WriteExpert(epath, e); err != nil {
		t.Fatal(err)
	}
	datafiletest.CheckExpert(t, epath, e)
}
