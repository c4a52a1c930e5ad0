package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// Options tune a collection run without changing its result.
type Options struct {
	// Workers is the number of simulators run side by side, one goroutine each; 0 means
	// GOMAXPROCS. The datasets are identical for any number of workers.
	Workers int
	// Progress, if set, is called after every finished episode with the transitions kept so far
	// and the total to collect. Calls are serialised.
	Progress func(done, total int)
}

// Result is a collected dataset: the offline archive and the expert state-only archive.
type Result struct {
	Offline *datafile.Offline
	Expert  *datafile.Expert
}

// Collect runs the plan's episodes on parallel simulators and assembles the datasets. Every
// episode depends only on the plan's seed, its mode and its number, and each mode keeps its
// episodes in order up to its quota (the last one cut short, marked as a timeout), so the result
// does not depend on the number of workers or on scheduling.
func Collect(ctx context.Context, p *Plan, opt Options) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s := newScheduler(ctx, p, opt.Progress)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { s.work() })
	}
	wg.Wait()
	if s.err != nil {
		return nil, s.err
	}
	return assemble(p, s.results)
}

// scheduler hands episodes to workers: a mode gets another episode while its finished episodes
// plus full-length ones for those still running fall short of its quota.
type scheduler struct {
	ctx      context.Context
	plan     *Plan
	progress func(done, total int)

	mu       sync.Mutex
	cond     *sync.Cond
	next     []int // next episode number per mode
	running  []int // episodes in flight per mode
	finished []int // transitions finished per mode
	results  [][]*rollout
	cursor   int // round-robin over modes
	done     int // transitions kept so far (counted up to the quotas)
	total    int
	err      error
}

func newScheduler(ctx context.Context, p *Plan, progress func(done, total int)) *scheduler {
	n := len(p.Modes)
	s := &scheduler{
		ctx: ctx, plan: p, progress: progress,
		next: make([]int, n), running: make([]int, n), finished: make([]int, n), results: make([][]*rollout, n),
	}
	s.cond = sync.NewCond(&s.mu)
	for _, m := range p.Modes {
		s.total += m.Transitions
	}
	return s
}

// take returns the next episode to run, or nil when the work is done or has failed. It waits
// while every quota is covered by running episodes, since one of them may yet fall short.
func (s *scheduler) take() *episode {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.err == nil {
			s.err = s.ctx.Err()
		}
		if s.err != nil {
			return nil
		}
		steps := s.plan.steps()
		busy := false
		for i := range s.plan.Modes {
			m := (s.cursor + i) % len(s.plan.Modes)
			if s.finished[m]+s.running[m]*steps < s.plan.Modes[m].Transitions {
				s.cursor = m + 1
				s.running[m]++
				j := s.next[m]
				s.next[m]++
				return s.plan.episode(m, j)
			}
			busy = busy || s.running[m] > 0
		}
		if !busy {
			return nil
		}
		s.cond.Wait()
	}
}

func (s *scheduler) finish(ep *episode, r *rollout, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.cond.Broadcast()
	s.running[ep.mode]--
	if err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("collect: mode %q episode %d: %w", s.plan.Modes[ep.mode].Name, ep.index, err)
		}
		return
	}
	res := s.results[ep.mode]
	for len(res) <= ep.index {
		res = append(res, nil)
	}
	res[ep.index] = r
	s.results[ep.mode] = res
	quota := s.plan.Modes[ep.mode].Transitions
	before := min(s.finished[ep.mode], quota)
	s.finished[ep.mode] += r.len()
	s.done += min(s.finished[ep.mode], quota) - before
	if s.progress != nil {
		s.progress(s.done, s.total)
	}
}

// work runs episodes until the scheduler has none left, each on its own simulator and core.
func (s *scheduler) work() {
	for ep := s.take(); ep != nil; ep = s.take() {
		r, err := run(s.ctx, s.plan, ep)
		s.finish(ep, r, err)
	}
}

// kept is the part of a mode's episodes inside its quota: whole episodes in order, the last
// one cut to fit.
type kept struct {
	r *rollout
	n int // transitions kept
}

func keep(quota int, rs []*rollout) []kept {
	var out []kept
	for _, r := range rs {
		if quota <= 0 {
			break
		}
		if r.len() == 0 {
			continue // a fault before the first transition
		}
		n := min(r.len(), quota)
		out = append(out, kept{r, n})
		quota -= n
	}
	return out
}

// assemble lays the kept episodes out as the two archives, modes in plan order.
func assemble(p *Plan, results [][]*rollout) (*Result, error) {
	total, expertTotal := 0, 0
	for _, m := range p.Modes {
		total += m.Transitions
		if m.Expert {
			expertTotal += m.Transitions
		}
	}
	d, k := p.Contract.Layout.Dim(), skills.NumJoints
	o := &datafile.Offline{
		Data: dataset.Offline{
			ObsDim: d, ActDim: k,
			Obs: make([]float32, total*d), Act: make([]float32, total*k), NextObs: make([]float32, total*d),
			Terminal: make([]bool, total), Timeout: make([]bool, total), EpisodeStart: make([]bool, total),
		},
		Withheld: datafile.Withheld{
			Reward: make([]float32, total), IsExpert: make([]bool, total), Mode: make([]int32, total),
			BasePosition: make([]float32, 3*total), BaseRPY: make([]float32, 3*total),
		},
	}
	ex := &datafile.Expert{Data: dataset.Expert{ObsDim: d, Obs: make([]float32, 0, expertTotal*d)}}
	modes := make([]datafile.Mode, len(p.Modes))
	od, w := &o.Data, &o.Withheld
	row := 0
	for m, mode := range p.Modes {
		info := &modes[m]
		*info = datafile.Mode{Name: mode.Name, Expert: mode.Expert}
		for _, kp := range keep(mode.Transitions, results[m]) {
			r, n := kp.r, kp.n
			copy(od.Obs[row*d:], r.obs[:n*d])
			copy(od.NextObs[row*d:], r.obs[d:(n+1)*d])
			copy(od.Act[row*k:], r.act[:n*k])
			copy(w.Reward[row:], r.reward[:n])
			copy(w.BasePosition[3*row:], r.pos[:3*n])
			copy(w.BaseRPY[3*row:], r.rpy[:3*n])
			for i := row; i < row+n; i++ {
				w.IsExpert[i], w.Mode[i] = mode.Expert, int32(m)
			}
			if mode.Expert {
				ex.Data.Obs = append(ex.Data.Obs, r.obs[:n*d]...)
			}
			od.EpisodeStart[row] = true
			last := row + n - 1
			if r.fell && n == r.len() {
				od.Terminal[last] = true
				info.Falls++
			} else {
				od.Timeout[last] = true
			}
			if r.reachedAt >= 0 && r.reachedAt < n {
				info.GoalReached++
			}
			if r.route != "" && r.routeAt < n {
				if info.Routes == nil {
					info.Routes = map[string]int{}
				}
				info.Routes[string(r.route)]++
			}
			info.Episodes++
			info.Transitions += n
			row += n
		}
		if info.Transitions != mode.Transitions {
			return nil, fmt.Errorf("collect: mode %q has %d of its %d transitions", mode.Name, info.Transitions, mode.Transitions)
		}
	}
	generator, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("collect: encode plan: %w", err)
	}
	o.Manifest = datafile.Manifest{
		FormatVersion: datafile.FormatVersion, Kind: datafile.KindOffline, Task: p.Task.Name,
		Contract: p.Contract, Transitions: total, ExpertTransitions: expertTotal, Modes: modes,
		Seed: p.Seed, SeedRule: SeedRule, Reward: p.Task.RewardDoc(), Generator: generator,
	}
	ex.Manifest = o.Manifest
	ex.Manifest.Kind, ex.Manifest.Modes, ex.Manifest.Transitions = datafile.KindExpert, nil, expertTotal
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := ex.Validate(); err != nil {
		return nil, err
	}
	return &Result{Offline: o, Expert: ex}, nil
}
