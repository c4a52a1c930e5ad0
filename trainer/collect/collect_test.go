package collect

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/datafile/datafiletest"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// SetActionScale changes the contract's scale and keeps every behaviour's noise the same in
// radians; at ActionScale the plan stays what NewPlan made, bit for bit (the shipped banks'
// data); a scale out of range is refused.
func TestSetActionScale(t *testing.T) {
	noiseRad := func(p *Plan) [][3]float64 {
		var out [][3]float64
		for _, m := range p.Modes {
			s := float64(p.Contract.ActionScale)
			out = append(out, [3]float64{m.ExecutionNoise * s, m.Spec.ActionNoise * s, m.Spec.RandomStd * s})
		}
		return out
	}
	for _, task := range []string{TaskLocomotion, TaskNavigation} {
		def, err := NewPlan(task, ScaleTest, 1)
		if err != nil {
			t.Fatal(err)
		}
		same, _ := NewPlan(task, ScaleTest, 1)
		if err := same.SetActionScale(ActionScale); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(same.Modes, def.Modes) || same.Contract.ActionScale != def.Contract.ActionScale {
			t.Errorf("%s: SetActionScale(ActionScale) changed the plan", task)
		}
		wide, _ := NewPlan(task, ScaleTest, 1)
		if err := wide.SetActionScale(1.2); err != nil {
			t.Fatal(err)
		}
		if wide.Contract.ActionScale != 1.2 || wide.actions.Scale != 1.2 || wide.bank.Contract.ActionScale != 1.2 {
			t.Errorf("%s: contract scale %v, action map %v, the core's bank %v after SetActionScale(1.2)",
				task, wide.Contract.ActionScale, wide.actions.Scale, wide.bank.Contract.ActionScale)
		}
		want, got := noiseRad(def), noiseRad(wide)
		for i := range want {
			for k := range want[i] {
				if math.Abs(got[i][k]-want[i][k]) > 1e-6 {
					t.Errorf("%s mode %s: noise %v rad at 1.2, %v at %v", task, def.Modes[i].Name, got[i], want[i], ActionScale)
				}
			}
		}
		for _, bad := range []float64{0, -0.8, math.NaN(), math.Inf(1), MaxActionScale + 0.1} {
			p, _ := NewPlan(task, ScaleTest, 1)
			if err := p.SetActionScale(bad); !errors.Is(err, ErrPlan) {
				t.Errorf("%s: SetActionScale(%v) = %v, want ErrPlan", task, bad, err)
			}
			if !reflect.DeepEqual(p.Modes, def.Modes) || p.Contract.ActionScale != def.Contract.ActionScale {
				t.Errorf("%s: the refused SetActionScale(%v) changed the plan", task, bad)
			}
		}
	}
}

// The collected datasets depend on the seed only: one worker and two give the same bytes, and
// another seed gives other data.
func TestCollectIsDeterministic(t *testing.T) {
	p := plan(t, TaskLocomotion, 1, map[string]int{"expert": 2, "low": 1, "random": 3})
	one, err := Collect(context.Background(), p, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	two, err := Collect(context.Background(), p, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one.Offline, two.Offline) || !reflect.DeepEqual(one.Expert, two.Expert) {
		t.Fatal("one and two workers collected different datasets")
	}
	p.Seed++
	other, err := Collect(context.Background(), p, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(one.Offline.Data.Obs, other.Offline.Data.Obs) {
		t.Fatal("another seed collected the same observations")
	}
}

// Quotas are exact: each mode holds exactly its transitions, the last episode of a mode cut and
// marked as a timeout, falls marked terminal; the expert archive holds the expert's states; both
// archives round-trip through the file format and pass the trainer's checks.
func TestCollectQuotasAndFiles(t *testing.T) {
	p := plan(t, TaskLocomotion, 1, map[string]int{"expert": 2, "random": 3})
	p.Modes[0].Transitions -= 7 // cut the expert's second episode short
	var calls, last int
	res, err := Collect(context.Background(), p, Options{Workers: 2, Progress: func(done, total int) {
		calls++
		if done < last || done > total {
			t.Errorf("progress %d of %d after %d", done, total, last)
		}
		last = done
	}})
	if err != nil {
		t.Fatal(err)
	}
	o, e := res.Offline, res.Expert
	steps := p.steps()
	if want := 2*steps - 7 + 3*steps; o.Data.Len() != want || last != want || calls == 0 {
		t.Fatalf("%d transitions, progress ended at %d after %d calls; want %d", o.Data.Len(), last, calls, want)
	}
	expert := o.Manifest.Modes[0]
	if expert.Episodes != 2 || expert.Transitions != 2*steps-7 || e.Data.Len() != expert.Transitions {
		t.Fatalf("expert mode %+v, expert archive %d states", expert, e.Data.Len())
	}
	// The expert's second episode ends with a cut; its states open the expert archive's rows.
	if !o.Data.Timeout[2*steps-8] || o.Data.Terminal[2*steps-8] || !o.Data.EpisodeStart[steps] {
		t.Fatal("the cut expert episode is not marked as a timeout")
	}
	if !reflect.DeepEqual(e.Data.Obs, o.Data.Obs[:len(e.Data.Obs)]) {
		t.Fatal("the expert archive does not hold the expert transitions' states")
	}
	terminals := 0
	for i, term := range o.Data.Terminal {
		if term {
			terminals++
			if o.Data.Timeout[i] {
				t.Fatalf("transition %d is both terminal and a timeout", i)
			}
		}
	}
	if terminals != o.Manifest.Modes[0].Falls+o.Manifest.Modes[len(o.Manifest.Modes)-1].Falls {
		t.Fatalf("%d terminal transitions, manifest counts other falls: %+v", terminals, o.Manifest.Modes)
	}
	for i, r := range o.Withheld.Reward {
		if !(r >= 0 && r <= 1) {
			t.Fatalf("locomotion reward %d is %v, want within [0,1]", i, r)
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "locomotion.npz")
	if err := datafile.WriteOffline(path, o); err != nil {
		t.Fatal(err)
	}
	if err := datafile.WriteExpert(datafile.ExpertPath(path), e); err != nil {
		t.Fatal(err)
	}
	ro, err := datafile.ReadOffline(path)
	if err != nil {
		t.Fatal(err)
	}
	re, err := datafile.ReadExpert(datafile.ExpertPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.CheckPair(&ro.Data, &re.Data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ro.Data, o.Data) || ro.Manifest.Contract.ActionScale != ActionScale || ro.Manifest.Contract.Kp != Kp {
		t.Fatal("the archive read back differs")
	}
}

// numpy reads every array of both files of a navigation set: 171-dim observations, the
// paper's layout of locomotion state (48 with the actions), height map (121) and remaining
// time (1).
func TestNavigationFilesReadByNumpy(t *testing.T) {
	datafiletest.SkipWithoutNumpy(t)
	p := plan(t, TaskNavigation, 1, map[string]int{"over": 2, "random": 1})
	res, err := Collect(context.Background(), p, Options{Workers: testWorkers})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Offline.Data.ObsDim; d != 171 {
		t.Fatalf("navigation observations have %d dims, want 171", d)
	}
	path := filepath.Join(t.TempDir(), "navigation.npz")
	if err := datafile.WriteOffline(path, res.Offline); err != nil {
		t.Fatal(err)
	}
	if err := datafile.WriteExpert(datafile.ExpertPath(path), res.Expert); err != nil {
		t.Fatal(err)
	}
	datafiletest.CheckOffline(t, path, res.Offline)
	datafiletest.CheckExpert(t, datafile.ExpertPath(path), res.Expert)
}

func TestCollectStopsOnCancel(t *testing.T) {
	p := plan(t, TaskLocomotion, 4, map[string]int{"expert": 50})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Collect(ctx, p, Options{Workers: 2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("cancelled collection took %v to stop", el)
	}
}

func TestPlans(t *testing.T) {
	for _, tc := range []struct {
		task             string
		scale            Scale
		expert, offline  int
		expertModes      int
		episodeSeconds   float64
		observationWidth int
	}{
		{TaskLocomotion, ScalePaper, 248_751, 248_751 + 996_000, 1, 20, 48},
		{TaskNavigation, ScalePaper, 654_501, 654_501 + 749_501, 3, 12, 171},
		{TaskLocomotion, ScaleTest, 2_000, 10_000, 1, 4, 48},
		{TaskNavigation, ScaleTest, 3_600, 7_200, 3, 12, 171},
	} {
		p, err := NewPlan(tc.task, tc.scale, 1)
		if err != nil {
			t.Fatal(err)
		}
		expert, total, modes := 0, 0, 0
		for _, m := range p.Modes {
			total += m.Transitions
			if m.Expert {
				expert += m.Transitions
				modes++
			}
		}
		if expert != tc.expert || total != tc.offline || modes != tc.expertModes ||
			p.Task.EpisodeSeconds != tc.episodeSeconds || p.Contract.Layout.Dim() != tc.observationWidth {
			t.Errorf("%s %s: %d expert of %d transitions in %d expert modes, %v s episodes, %d-dim observations",
				tc.task, tc.scale, expert, total, modes, p.Task.EpisodeSeconds, p.Contract.Layout.Dim())
		}
		if p.Contract.ActionScale != ActionScale || p.Contract.Kp > 5.15 || p.Contract.Kd > 0.61 {
			t.Errorf("%s: contract %v / %v / %v", tc.task, p.Contract.ActionScale, p.Contract.Kp, p.Contract.Kd)
		}
		// The behaviours' noise in radians of joint target, the same for both tasks: the
		// experts' DART noise, the noisy modes' action noise, the random policy's spread.
		for _, m := range p.Modes {
			s := float64(p.Contract.ActionScale)
			for _, n := range []struct {
				what      string
				rad, want float64
			}{
				{"execution noise", m.ExecutionNoise * s, map[bool]float64{true: 0.08}[m.Expert]},
				{"action noise", m.Spec.ActionNoise * s, map[bool]float64{true: 0.12}[strings.HasPrefix(m.Name, "noisy")]},
				{"random spread", m.Spec.RandomStd * s, map[bool]float64{true: 0.48}[m.Name == "random"]},
			} {
				if math.Abs(n.rad-n.want) > 1e-6 {
					t.Errorf("%s mode %s: %s %.4g rad, want %g", tc.task, m.Name, n.what, n.rad, n.want)
				}
			}
		}
	}
	for _, bad := range []struct {
		task  string
		scale Scale
	}{{"swimming", ScaleTest}, {TaskLocomotion, "huge"}} {
		if _, err := NewPlan(bad.task, bad.scale, 1); !errors.Is(err, ErrPlan) {
			t.Errorf("NewPlan(%q, %q) = %v, want ErrPlan", bad.task, bad.scale, err)
		}
	}
	p := plan(t, TaskLocomotion, 1, map[string]int{"low": 1})
	if _, err := Collect(context.Background(), p, Options{}); !errors.Is(err, ErrPlan) {
		t.Errorf("a plan without expert transitions: %v, want ErrPlan", err)
	}
}
