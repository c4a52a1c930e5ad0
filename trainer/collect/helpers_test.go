package collect

import (
	"context"
	"math"
	"testing"

	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/trainer/datafile"
)

// testWorkers is the machine's core count: tests run the simulators side by side.
const testWorkers = 2

// plan returns the test-scale plan of task, cut to the named modes with episodes full episodes
// of seconds each; every other mode gets no transitions.
func plan(t testing.TB, task string, seconds float64, episodes map[string]int) *Plan {
	t.Helper()
	p, err := NewPlan(task, ScaleTest, 42)
	if err != nil {
		t.Fatal(err)
	}
	p.Task.EpisodeSeconds = seconds
	if p.Contract.EpisodeSeconds != 0 {
		p.Contract.EpisodeSeconds = seconds
	}
	found := 0
	for i := range p.Modes {
		m := &p.Modes[i]
		m.Transitions = episodes[m.Name] * p.steps()
		if episodes[m.Name] > 0 {
			found++
		}
	}
	if found != len(episodes) {
		t.Fatalf("plan %s has no mode for some of %v", task, episodes)
	}
	return p
}

func collect(t testing.TB, p *Plan) *datafile.Offline {
	t.Helper()
	res, err := Collect(context.Background(), p, Options{Workers: testWorkers})
	if err != nil {
		t.Fatal(err)
	}
	return res.Offline
}

// span is one episode's rows in an offline archive.
type span struct{ mode, start, end int }

func episodes(o *datafile.Offline) []span {
	var out []span
	for i, s := range o.Data.EpisodeStart {
		if s {
			if len(out) > 0 {
				out[len(out)-1].end = i
			}
			out = append(out, span{mode: int(o.Withheld.Mode[i]), start: i})
		}
	}
	if len(out) > 0 {
		out[len(out)-1].end = o.Data.Len()
	}
	return out
}

// gaitStats are one mode's mean forward speed (along the heading), yaw rate and base height over
// its episodes, from the ground-truth columns, skipping each episode's first skip seconds.
type gaitStats struct{ speed, yawRate, height float64 }

func statsByMode(o *datafile.Offline, skip float64) map[string]gaitStats {
	sum := map[string]gaitStats{}
	count := map[string]float64{}
	w := &o.Withheld
	first := int(math.Round(skip / behave.PolicyPeriod))
	for _, ep := range episodes(o) {
		name := o.Manifest.Modes[ep.mode].Name
		for i := ep.start + first; i+1 < ep.end; i++ {
			yaw := float64(w.BaseRPY[3*i+2])
			dx := float64(w.BasePosition[3*(i+1)] - w.BasePosition[3*i])
			dy := float64(w.BasePosition[3*(i+1)+1] - w.BasePosition[3*i+1])
			dyaw := math.Remainder(float64(w.BaseRPY[3*(i+1)+2])-yaw, 2*math.Pi)
			s := sum[name]
			s.speed += (math.Cos(yaw)*dx + math.Sin(yaw)*dy) / behave.PolicyPeriod
			s.yawRate += dyaw / behave.PolicyPeriod
			s.height += float64(w.BasePosition[3*i+2])
			sum[name] = s
			count[name]++
		}
	}
	out := map[string]gaitStats{}
	for name, s := range sum {
		n := count[name]
		out[name] = gaitStats{s.speed / n, s.yawRate / n, s.height / n}
	}
	return out
}

func modeByName(t testing.TB, p *Plan, name string) *Mode {
	t.Helper()
	for i := range p.Modes {
		if p.Modes[i].Name == name {
			return &p.Modes[i]
		}
	}
	t.Fatalf("no mode %q", name)
	return nil
}
