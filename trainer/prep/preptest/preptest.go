// Package preptest owns the prepared synthetic task the trainers' tests run
// on: trainer/datafile/datafiletest's archives through prep.Prepare.
package preptest

import (
	"testing"

	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/prep"
)

// Synthetic is the synthetic locomotion task of sizes sz and data seed
// seed, prepared for training; withExpert false leaves the expert set out.
func Synthetic(t testing.TB, sz datafiletest.Sizes, seed uint64, withExpert bool) *prep.Data {
	t.Helper()
	off, exp := datafiletest.Datasets(t, sz, seed)
	if !withExpert {
		exp = nil
	}
	in, err := prep.FromFiles(prep.TaskLocomotion, off, exp)
	if err != nil {
		t.Fatal(err)
	}
	d, err := prep.Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
