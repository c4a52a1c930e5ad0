package prep

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// TestBadInputIsRefusedBeforeTraining: every defect of the inputs is a
// clear, typed error from FromFiles or Prepare, before anything trains.
func TestBadInputIsRefusedBeforeTraining(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		task   string
		files  func(o *datafile.Offline, e *datafile.Expert) // edits before FromFiles
		inputs func(in *Inputs)                              // edits before Prepare
		target any                                           // sentinel error or pointer to a typed error for errors.As
	}{
		{"valid", "locomotion", nil, nil, nil},
		{"task from the manifest", "", nil, nil, nil},
		{"NaN observation", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) { o.Data.Obs[100] = nan }, nil, &dataset.NonFiniteError{}},
		{"Inf next observation", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) {
			o.Data.NextObs[5] = float32(math.Inf(-1))
		}, nil, &dataset.NonFiniteError{}},
		{"NaN expert state", "locomotion", func(_ *datafile.Offline, e *datafile.Expert) { e.Data.Obs[7] = nan }, nil, &dataset.NonFiniteError{}},
		{"observation too large to standardise", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) {
			// float32 (x - mean) overflows although x, mean and std are finite.
			o.Data.Obs[3], o.Data.Obs[3+48], o.Data.Obs[3+96] = 3.4e38, -3.4e38, -3.4e38
		}, nil, &dataset.NonFiniteError{}},
		{"short actions", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) { o.Data.Act = o.Data.Act[:len(o.Data.Act)-1] }, nil, &dataset.ShapeError{}},
		{"action out of range", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) { o.Data.Act[0] = 3 }, nil, &dataset.ActionRangeError{}},
		{"empty expert set", "locomotion", func(_ *datafile.Offline, e *datafile.Expert) { e.Data.Obs = nil }, nil, dataset.ErrEmptyExpert},
		{"no initial state", "locomotion", func(o *datafile.Offline, _ *datafile.Expert) { clear(o.Data.EpisodeStart) }, nil, dataset.ErrNoInitialState},
		{"expert width differs", "locomotion", func(_ *datafile.Offline, e *datafile.Expert) {
			e.Data.ObsDim, e.Data.Obs = 8, e.Data.Obs[:64]
		}, nil, &dataset.DimError{}},
		{"data narrower than the layout", "locomotion", func(o *datafile.Offline, e *datafile.Expert) {
			narrow := func(x []float32) []float32 {
				var out []float32
				for r := 0; r < len(x); r += 48 {
					out = append(out, x[r:r+47]...)
				}
				return out
			}
			o.Data.ObsDim, e.Data.ObsDim = 47, 47
			o.Data.Obs, o.Data.NextObs, e.Data.Obs = narrow(o.Data.Obs), narrow(o.Data.NextObs), narrow(e.Data.Obs)
		}, nil, ErrContract},
		{"navigation requested on locomotion data", "navigation", nil, nil, ErrTaskMismatch},
		{"manifest task differs from the layout", "", func(o *datafile.Offline, e *datafile.Expert) {
			o.Manifest.Task, e.Manifest.Task = "navigation", "navigation"
		}, nil, ErrTaskMismatch},
		{"unknown task", "swimming", func(o *datafile.Offline, e *datafile.Expert) {
			o.Manifest.Task, e.Manifest.Task = "swimming", "swimming"
		}, nil, ErrUnknownTask},
		{"expert recorded for another task", "locomotion", func(_ *datafile.Offline, e *datafile.Expert) {
			e.Manifest.Task = "navigation"
		}, nil, ErrTaskMismatch},
		{"expert in another layout", "locomotion", func(_ *datafile.Offline, e *datafile.Expert) {
			e.Manifest.Contract.Layout = skills.Navigation171()
		}, nil, ErrTaskMismatch},
		{"labels of another length", "locomotion", nil, func(in *Inputs) {
			in.IsExpert = in.IsExpert[1:]
		}, &dataset.ShapeError{}},
		{"behaviour labels of another length", "locomotion", nil, func(in *Inputs) {
			in.Behaviours = &Behaviours{Names: in.Behaviours.Names, Of: in.Behaviours.Of[1:]}
		}, ErrBehaviours},
		{"behaviour label past the names", "locomotion", nil, func(in *Inputs) {
			of := append([]int32(nil), in.Behaviours.Of...)
			of[len(of)-1] = int32(len(in.Behaviours.Names))
			in.Behaviours = &Behaviours{Names: in.Behaviours.Names, Of: of}
		}, ErrBehaviours},
		{"negative behaviour label", "locomotion", nil, func(in *Inputs) {
			of := append([]int32(nil), in.Behaviours.Of...)
			of[0] = -1
			in.Behaviours = &Behaviours{Names: in.Behaviours.Names, Of: of}
		}, ErrBehaviours},
		{"contract's phi onto a field the layout lacks", "locomotion", nil, func(in *Inputs) {
			in.Contract.Features.Fields = []string{skills.FieldTarget}
		}, ErrContract},
		{"phi onto a field the layout lacks", "locomotion", nil, func(in *Inputs) {
			in.Features = []string{skills.FieldJointPos, skills.FieldHeightMap}
		}, ErrContract},
		{"phi onto a value past the field's end", "locomotion", nil, func(in *Inputs) {
			in.Features = []string{skills.FieldJointPos, skills.FieldBaseLinVel + "[3]"}
		}, ErrContract},
		{"phi onto no field", "locomotion", nil, func(in *Inputs) { in.Features = []string{} }, ErrContract},
		{"contract over the link's gain ceiling", "locomotion", nil, func(in *Inputs) {
			in.Contract.Kp = 100
		}, ErrContract},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, e := datafiletest.Datasets(t, datafiletest.Sizes{Expert: 2, Random: 2, Drift: 1, ExpertSet: 2}, 9)
			if tc.files != nil {
				tc.files(o, e)
			}
			in, err := FromFiles(tc.task, o, e)
			if err == nil {
				if tc.inputs != nil {
					tc.inputs(&in)
				}
				_, err = Prepare(in)
			}
			if err != nil {
				t.Logf("error: %v", err)
			}
			checkError(t, err, tc.target)
		})
	}
}

func checkError(t *testing.T, err error, target any) {
	t.Helper()
	switch want := target.(type) {
	case nil:
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
	case *dataset.NonFiniteError:
		if !errors.As(err, &want) {
			t.Fatalf("error %v, want a NonFiniteError", err)
		}
	case *dataset.ShapeError:
		if !errors.As(err, &want) {
			t.Fatalf("error %v, want a ShapeError", err)
		}
	case *dataset.DimError:
		if !errors.As(err, &want) {
			t.Fatalf("error %v, want a DimError", err)
		}
	case *dataset.ActionRangeError:
		if !errors.As(err, &want) {
			t.Fatalf("error %v, want an ActionRangeError", err)
		}
	case error:
		if !errors.Is(err, want) {
			t.Fatalf("error %v, want %v", err, want)
		}
	}
}

// prepared loads and prepares locomotion datasets that must be valid.
func prepared(t *testing.T, o *datafile.Offline, e *datafile.Expert) (Inputs, *Data) {
	t.Helper()
	in, err := FromFiles("locomotion", o, e)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	return in, d
}

func TestPrepareStandardises(t *testing.T) {
	off, exp := datafiletest.Datasets(t, datafiletest.Small, 5)
	_, d := prepared(t, off, exp)
	dim, n := d.Offline.ObsDim, d.Offline.Len()
	jp, _ := d.Contract.Layout.Field(skills.FieldJointPos)
	for _, j := range []int{0, jp.Offset + 3, dim - 1} {
		var s, sq float64
		for i := range n {
			v := float64(d.Offline.Obs[i*dim+j])
			s += v
			sq += v * v
		}
		mean, std := s/float64(n), math.Sqrt(sq/float64(n)-(s/float64(n))*(s/float64(n)))
		if math.Abs(mean) > 1e-4 || (std > 1e-3 && math.Abs(std-1) > 1e-3 && d.Contract.Normaliser.Std[j] > skills.DefaultNormEpsilon) {
			t.Errorf("dim %d: standardised mean %v std %v", j, mean, std)
		}
	}
	if d.FeatureDim != skills.NumJoints || len(d.Phi) != n*d.FeatureDim {
		t.Fatalf("features: dim %d, %d values", d.FeatureDim, len(d.Phi))
	}
	// phi is the standardised joint_pos field, with its own statistics.
	f := d.FeatureDim
	for i := range f {
		var s float64
		for r := range n {
			s += float64(d.Phi[r*f+i])
		}
		if math.Abs(s/float64(n)) > 1e-4 {
			t.Errorf("feature %d has mean %v", i, s/float64(n))
		}
	}
	proj, err := d.Contract.NewProjector()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, f)
	if err := proj.Project(off.Data.Obs[7*dim:8*dim], got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(float64(got[i]-d.Phi[7*f+i])) > 1e-5 {
			t.Fatalf("bank projector gives %v, training used %v", got, d.Phi[7*f:8*f])
		}
	}
}

func TestBehaviourMassShareAndMean(t *testing.T) {
	b := &Behaviours{Names: []string{"expert", "random", "drift"}, Of: []int32{0, 1, 1, 0, 1}}
	if err := b.check(5); err != nil {
		t.Fatal(err)
	}
	mass := b.Mass([]float64{0.4, 0.1, 0.1, 0.3, 0.1})
	share := b.Share()
	mean := b.MeanOf([]float32{1, -2, -4, 3, 0})
	if mean[0] != 2 || mean[1] != -2 || !math.IsNaN(mean[2]) {
		t.Errorf("means %v, want [2 -2 NaN]", mean)
	}
	for k, want := range [][2]float64{{0.7, 0.4}, {0.3, 0.6}, {0, 0}} {
		if math.Abs(mass[k]-want[0]) > 1e-12 || math.Abs(share[k]-want[1]) > 1e-12 {
			t.Errorf("%s: mass %v share %v, want %v", b.Names[k], mass[k], share[k], want)
		}
	}
}

// The world the data were collected in travels from the manifest to the prepared data, where
// training's checks read it; a manifest that names none leaves it to the task.
func TestWorldFollowsTheManifest(t *testing.T) {
	for generator, want := range map[string]string{"": "", `{"task":{"world":"high_box.yaml"}}`: "high_box.yaml"} {
		o, e := datafiletest.Datasets(t, datafiletest.Sizes{Expert: 2, Random: 2, Drift: 1, ExpertSet: 2}, 9)
		o.Manifest.Generator = []byte(generator)
		in, d := prepared(t, o, e)
		if in.World != want || d.World != want {
			t.Errorf("generator %q: world %q in the inputs, %q in the data; want %q", generator, in.World, d.World, want)
		}
	}
}

// TestFeaturesReplaceTheTasks: Inputs.Features makes phi the standardised
// projection onto those fields, in that order, as the bank's projector
// computes it on the robot, and Project with WithFeatures gives the same
// from the raw set.
func TestFeaturesReplaceTheTasks(t *testing.T) {
	off, exp := datafiletest.Datasets(t, datafiletest.Small, 5)
	in, err := FromFiles("locomotion", off, exp)
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{skills.FieldBaseAngVel, skills.FieldJointPos}
	in.Features = fields
	d, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Contract.Features.Fields, fields) || d.FeatureDim != 3+skills.NumJoints {
		t.Fatalf("phi onto %q (%d values), want %q", d.Contract.Features.Fields, d.FeatureDim, fields)
	}
	dim, f := d.Offline.ObsDim, d.FeatureDim
	proj, err := d.Contract.NewProjector()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, f)
	for _, row := range []int{0, 7, d.Offline.Len() - 1} {
		if err := proj.Project(off.Data.Obs[row*dim:(row+1)*dim], got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i]-d.Phi[row*f+i])) > 1e-5 {
				t.Fatalf("row %d: the bank's projector gives %v, training used %v", row, got, d.Phi[row*f:(row+1)*f])
			}
		}
	}
	ang, _ := d.Contract.Layout.Field(skills.FieldBaseAngVel)
	if raw, mean, std := off.Data.Obs[7*dim+ang.Offset], d.Contract.Features.Stats.Mean[0], d.Contract.Features.Stats.Std[0]; math.Abs(float64((raw-mean)/std-d.Phi[7*f])) > 1e-5 {
		t.Fatalf("phi's first value is not the standardised base_ang_vel x: %v, want (%v - %v) / %v", d.Phi[7*f], raw, mean, std)
	}

	// The task's phi, rebuilt from the raw set, is what Prepare gives without Features.
	in.Features = nil
	def, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Project(in.Offline, d.Contract.Layout, def.Contract.Features.Fields)
	if err != nil {
		t.Fatal(err)
	}
	back := d.WithFeatures(p)
	if !slices.Equal(back.Phi, def.Phi) || back.FeatureDim != def.FeatureDim ||
		!slices.Equal(back.Contract.Features.Stats.Mean, def.Contract.Features.Stats.Mean) || !slices.Equal(back.Contract.Features.Stats.Std, def.Contract.Features.Stats.Std) {
		t.Fatal("Project and WithFeatures do not rebuild the task's phi bit for bit")
	}
	if !slices.Equal(d.Contract.Features.Fields, fields) {
		t.Fatal("WithFeatures changed the data it copied")
	}
}
