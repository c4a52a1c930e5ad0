package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/sim"
	"github.com/dualforce/dualforce/sim/behave"
	"github.com/dualforce/dualforce/sim/robotboard"
	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/collect"
	"github.com/dualforce/dualforce/trainer/rig"
	"gonum.org/v1/gonum/stat"
)

// Config sets up an evaluation. TaskConfig gives the paper's settings for a task.
type Config struct {
	// Task is the withheld reward, the locomotion command or navigation goal heading the core
	// is given, and the episode length; Task.World names the world (a built-in name or a
	// scenario file, as collect was given it).
	Task collect.Task
	// Scenario is the world to run in (nil: Task.World's).
	Scenario *worlds.Scenario
	// Rollouts per latent, and the master seed every rollout draws from.
	Rollouts int
	Seed     uint64
	// Workers run rollouts side by side, one simulator each (0: GOMAXPROCS).
	Workers int
	// StartYaw is the +- range (rad) of the uniform random start heading added to the world's.
	StartYaw float64
	// StandUp is the core's stand-up move; Settle how long it then holds the default pose
	// before the skill is started with an operator "run" command.
	StandUp, Settle time.Duration
	// Noise is the simulated sensors' noise.
	Noise sim.Noise
	// HostDelay leaves each robot unattended that long before the runtime core connects: it
	// sinks onto the ground with its motors off and is stood up from there, as a runtime
	// started after the robot finds it (robotboard.Config.HostDelay). 0: connected at power-on,
	// as the data were collected.
	HostDelay time.Duration
	// Discount weights the acting states' features in the online successor features: state k
	// by Discount^k, normalised. 1 (or 0, the zero value) is the plain mean over the episode.
	Discount float64
	// Switching lets the core switch navigation skills when an obstacle blocks the running
	// one (the runtime's robustness feature); off, each latent is measured on its own.
	Switching bool
	// Features is phi (nil: the first subject's bank's), one projection for every subject so
	// that their successor features are comparable.
	Features *skills.Features
	// Traces keeps every rollout's per-tick series (Rollout.Trace).
	Traces bool
	// Paths keeps the base path (Rollout.Path) of each latent's first Paths rollouts.
	Paths int
	// Core adjusts the core's configuration after the harness has set it up (tests: limits).
	Core func(*core.Config)
	// Progress, if set, is called after every finished rollout with the rollouts done and the
	// total; calls are serialised.
	Progress func(done, total int)
}

// TaskConfig returns the evaluation settings of a task (collect.TaskLocomotion or
// collect.TaskNavigation): the task and start-heading range of its paper-scale dataset plan,
// 30 rollouts, the default stand-up and settle times.
func TaskConfig(task string) (Config, error) {
	p, err := collect.NewPlan(task, collect.ScalePaper, 0)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Config{Task: p.Task, Rollouts: 30, StartYaw: p.StartYaw, StandUp: rig.DefaultStandUp, Settle: rig.DefaultSettle}, nil
}

// ErrConfig reports an evaluation that cannot run as configured.
var ErrConfig = errors.New("eval: bad config")

func (c *Config) discount() float64 {
	if c.Discount == 0 {
		return 1
	}
	return c.Discount
}

// steps is the number of policy steps of a full episode.
func (c *Config) steps() int {
	return int(math.Round(c.Task.EpisodeSeconds * skills.DefaultPolicyHz))
}

// taskLayouts is the observation layout each task's banks are in.
var taskLayouts = map[string]string{
	collect.TaskLocomotion: skills.Locomotion48().Name,
	collect.TaskNavigation: skills.Navigation171().Name,
}

func (c *Config) validate(subjects []Subject) error {
	bad := func(format string, a ...any) error { return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...)) }
	_, ok := taskLayouts[c.Task.Name]
	switch {
	case !ok:
		return bad("task %q: want %s or %s", c.Task.Name, collect.TaskLocomotion, collect.TaskNavigation)
	case c.Rollouts < 1:
		return bad("%d rollouts per latent", c.Rollouts)
	case !(c.Task.EpisodeSeconds > 0) || c.steps() < 1:
		return bad("episode of %v s: want at least one policy step", c.Task.EpisodeSeconds)
	case c.Workers < 0:
		return bad("%d workers", c.Workers)
	case c.Paths < 0:
		return bad("%d paths per latent", c.Paths)
	case !(c.StandUp > 0) || c.Settle < 0:
		return bad("stand-up %v and settle %v: want a positive stand-up and a non-negative settle", c.StandUp, c.Settle)
	case c.HostDelay < 0:
		return bad("host delay %v: want 0 or more", c.HostDelay)
	case !(c.Discount >= 0 && c.Discount <= 1):
		return bad("discount %v outside [0, 1]", c.Discount)
	case math.IsNaN(c.StartYaw) || math.IsInf(c.StartYaw, 0):
		return bad("start heading range %v", c.StartYaw)
	case len(subjects) == 0:
		return bad("nothing to evaluate")
	}
	for i, s := range subjects {
		if s.Bank == nil {
			return bad("subject %d (%s) has no bank", i, s.Label)
		}
		if s.Latent < 0 || s.Latent >= len(s.Bank.Latents) {
			return bad("subject %d (%s): latent %d of %d", i, s.Label, s.Latent, len(s.Bank.Latents))
		}
		if err := c.runs(&s.Bank.Contract); err != nil {
			return fmt.Errorf("subject %d (%s): %w", i, s.Label, err)
		}
	}
	return nil
}

// runs says whether the task can run banks of contract c: the task's layout, the policy rate
// its rewards are measured at.
func (c *Config) runs(ct *skills.Contract) error {
	layout, ok := taskLayouts[c.Task.Name]
	switch {
	case !ok:
		return fmt.Errorf("%w: task %q: want %s or %s", ErrConfig, c.Task.Name, collect.TaskLocomotion, collect.TaskNavigation)
	case ct.Layout.Name != layout:
		return fmt.Errorf("%w: a %q bank cannot run the %s task (layout %q)", ErrConfig, ct.Layout.Name, c.Task.Name, layout)
	case ct.PolicyHz != skills.DefaultPolicyHz:
		return fmt.Errorf("%w: policy rate %d Hz; the task rewards are measured at %d Hz", ErrConfig, ct.PolicyHz, skills.DefaultPolicyHz)
	}
	return nil
}

// Subject is one latent of one bank to evaluate.
type Subject struct {
	Label  string
	Bank   *skills.Bank
	Latent int
}

// Latents lists every latent of b as a subject, labelled by name (or skill and iteration).
func Latents(b *skills.Bank) []Subject {
	out := make([]Subject, len(b.Latents))
	for i, l := range b.Latents {
		label := l.Info.Name
		if label == "" {
			label = fmt.Sprintf("skill%d-iter%d", l.Info.Skill, l.Info.Iteration)
		}
		out[i] = Subject{Label: label, Bank: b, Latent: i}
	}
	return out
}

// Summary is one subject's evaluation.
type Summary struct {
	Label     string   `json:"label"`
	Latent    int      `json:"latent"`
	Skill     int      `json:"skill"`
	Iteration int      `json:"iteration"`
	Tags      []string `json:"tags,omitempty"`
	// MeanReturn and StdReturn (sample standard deviation) of the rollouts' returns.
	MeanReturn float64 `json:"mean_return"`
	StdReturn  float64 `json:"std_return"`
	// FallRate and GoalRate are the fractions of rollouts that fell and that reached the goal.
	FallRate  float64 `json:"fall_rate"`
	GoalRate  float64 `json:"goal_rate"`
	MeanSteps float64 `json:"mean_steps"`
	// Routes counts the rollouts by the way they went past the navigation box (Rollout.Route).
	Routes map[behave.Route]int `json:"routes,omitempty"`
	// Psi is the mean online successor features; OfflinePsi the bank's offline estimate.
	Psi        []float64 `json:"psi"`
	OfflinePsi []float32 `json:"offline_psi"`
	// VelRMSE is the mean over rollouts of the estimator's velocity error (m/s, base frame).
	VelRMSE     [3]float64 `json:"estimator_vel_rmse"`
	VelRMSENorm float64    `json:"estimator_vel_rmse_norm"`
	// Descriptors are the mean of the rollouts' descriptors; TimeToGoal the mean time (s since
	// the skill started) at which the rollouts that reached the goal got there, absent if none.
	Descriptors Descriptors `json:"descriptors"`
	TimeToGoal  *float64    `json:"time_to_goal,omitempty"`
	// Measured are the tags of what the latent was measured to do (MeasuredTags).
	Measured []string `json:"measured_tags,omitempty"`
	// WorldGoalRate is the goal rate in other worlds (the robustness experiment), by world;
	// WorldRollouts are those worlds' rollouts, with every switch the core made in them
	// (without base paths: Config.Paths applies to the world evaluated in).
	WorldGoalRate map[string]float64   `json:"world_goal_rate,omitempty"`
	WorldRollouts map[string][]Rollout `json:"world_rollouts,omitempty"`
	// Passed is the >= fraction-of-the-expert filter, set by Result.Filter.
	Passed   *bool     `json:"passed_filter,omitempty"`
	Rollouts []Rollout `json:"rollouts"`
}

// Result is a whole evaluation.
type Result struct {
	Task           string   `json:"task"`
	World          string   `json:"world"`
	Seed           uint64   `json:"seed"`
	Rollouts       int      `json:"rollouts_per_latent"`
	EpisodeSeconds float64  `json:"episode_seconds"`
	Discount       float64  `json:"sf_discount"`
	Features       []string `json:"features"`
	// Subjects in the order given; Distances[i][j] = ||Psi_i - Psi_j||.
	Subjects  []Summary   `json:"subjects"`
	Distances [][]float64 `json:"sf_distances"`
	// PolicySteps and link Ticks (power-on and stand-up included) run in all; Seconds of wall
	// time they took.
	PolicySteps int     `json:"policy_steps"`
	Ticks       int     `json:"ticks"`
	Seconds     float64 `json:"seconds"`
	// FilterReference and FilterFraction record the filter applied, if any.
	FilterReference *int    `json:"filter_reference,omitempty"`
	FilterFraction  float64 `json:"filter_fraction,omitempty"`
	// AfterSwitch is the goal rates after a switch (AfterSwitch), if measured.
	AfterSwitch *AfterSwitchResult `json:"after_switch,omitempty"`
	// Switching is the core's switching settings (durations in ns), when it was allowed to
	// switch (Config.Switching): what a goal rate with switching was measured under.
	Switching *core.SwitchConfig `json:"switching,omitempty"`
}

// switchConfig is what the rollouts' cores switch by: bank's defaults with cfg's settings.
func (cfg *Config) switchConfig(bank *skills.Bank) *core.SwitchConfig {
	if !cfg.Switching {
		return nil
	}
	c := core.DefaultConfig(bank)
	cfg.setCore(&c)
	return &c.Switching
}

// scenario is the world cfg runs in.
func (cfg Config) scenario() (*worlds.Scenario, error) {
	if cfg.Scenario != nil {
		return cfg.Scenario, nil
	}
	s, err := robotboard.LoadScenario(cfg.Task.World)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return s, nil
}

// Evaluate runs cfg.Rollouts rollouts of every subject and summarises them. The result depends
// only on cfg and the subjects, not on the number of workers.
func Evaluate(ctx context.Context, cfg Config, subjects []Subject) (*Result, error) {
	if err := cfg.validate(subjects); err != nil {
		return nil, err
	}
	scenario, err := cfg.scenario()
	if err != nil {
		return nil, err
	}
	features := subjects[0].Bank.Contract.Features
	if cfg.Features != nil {
		features = *cfg.Features
	}
	projector, err := skills.NewProjector(subjects[0].Bank.Contract.Layout, features)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	jobs := make([]job, 0, len(subjects)*cfg.Rollouts)
	for _, s := range subjects {
		for k := range cfg.Rollouts {
			jobs = append(jobs, job{cfg: &cfg, subject: s, scenario: scenario, projector: projector, obsStats: s.Bank.Contract.Normaliser, index: k})
		}
	}
	start := time.Now()
	rollouts, err := runJobs(ctx, &cfg, jobs)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Task: cfg.Task.Name, World: scenario.Name, Seed: cfg.Seed, Rollouts: cfg.Rollouts,
		EpisodeSeconds: cfg.Task.EpisodeSeconds, Discount: cfg.discount(), Features: features.Fields,
		Seconds: time.Since(start).Seconds(), Switching: cfg.switchConfig(subjects[0].Bank),
	}
	for i, s := range subjects {
		runs := rollouts[i*cfg.Rollouts : (i+1)*cfg.Rollouts]
		sum := summarise(s, runs, projector.Dim())
		sum.Measured = MeasuredTags(cfg.Task, scenario.Name, &sum)
		res.Subjects = append(res.Subjects, sum)
		for _, r := range runs {
			res.PolicySteps += r.Steps
			res.Ticks += r.Ticks
		}
	}
	res.Distances = distances(res.Subjects)
	return res, nil
}

// runJobs runs the jobs on parallel workers; results are in job order.
func runJobs(ctx context.Context, cfg *Config, jobs []job) ([]Rollout, error) {
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]Rollout, len(jobs))
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				r, err := jobs[i].run(ctx)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("eval: %s rollout %d: %w", jobs[i].subject.Label, jobs[i].index, err)
					cancel()
				}
				out[i] = r
				done++
				if err == nil && cfg.Progress != nil {
					cfg.Progress(done, len(jobs))
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func summarise(s Subject, runs []Rollout, featDim int) Summary {
	info := &s.Bank.Latents[s.Latent].Info
	sum := Summary{
		Label: s.Label, Latent: s.Latent, Skill: info.Skill, Iteration: info.Iteration, Tags: info.Tags,
		Psi: make([]float64, featDim), OfflinePsi: info.OfflinePsi, Rollouts: runs,
	}
	n := float64(len(runs))
	returns := make([]float64, len(runs))
	goalTime, reached, falls := 0.0, 0, 0
	for k, r := range runs {
		sum.Descriptors.Height += r.Descriptors.Height / n
		sum.Descriptors.ForwardVel += r.Descriptors.ForwardVel / n
		sum.Descriptors.LateralVel += r.Descriptors.LateralVel / n
		sum.Descriptors.YawRate += r.Descriptors.YawRate / n
		returns[k] = r.Return
		sum.MeanSteps += float64(r.Steps) / n
		if r.Fell {
			falls++
		}
		if r.GoalStep >= 0 {
			reached++
			// Transition k ends in state k+1, one policy period after state k.
			goalTime += float64(r.GoalStep+1) / float64(s.Bank.Contract.PolicyHz)
		}
		if r.Route != "" {
			if sum.Routes == nil {
				sum.Routes = map[behave.Route]int{}
			}
			sum.Routes[r.Route]++
		}
		for i, v := range r.Psi {
			sum.Psi[i] += v / n
		}
		for a := range 3 {
			sum.VelRMSE[a] += r.VelRMSE[a] / n
		}
		sum.VelRMSENorm += r.VelRMSENorm / n
	}
	// Counts, not sums of 1/n: thirty thirtieths add up to a little more than 1.
	sum.FallRate, sum.GoalRate = float64(falls)/n, float64(reached)/n
	if reached > 0 {
		t := goalTime / float64(reached)
		sum.TimeToGoal = &t
	}
	sum.MeanReturn, sum.StdReturn = stat.MeanStdDev(returns, nil)
	if len(runs) < 2 {
		sum.StdReturn = 0 // one rollout has no spread (gonum gives NaN)
	}
	return sum
}

// distances is the pairwise l2 distance matrix of the subjects' online successor features.
func distances(subjects []Summary) [][]float64 {
	d := make([][]float64, len(subjects))
	for i := range subjects {
		d[i] = make([]float64, len(subjects))
		for j := range subjects {
			ss := 0.0
			for k, v := range subjects[i].Psi {
				e := v - subjects[j].Psi[k]
				ss += e * e
			}
			d[i][j] = math.Sqrt(ss)
		}
	}
	return d
}

// Filter marks every subject that reaches at least fraction of subject ref's mean return (the
// paper keeps latents with >= 50% of the SMODICE-expert's). The reference is marked too.
func (r *Result) Filter(ref int, fraction float64) error {
	if ref < 0 || ref >= len(r.Subjects) {
		return fmt.Errorf("%w: filter reference %d of %d subjects", ErrConfig, ref, len(r.Subjects))
	}
	if math.IsNaN(fraction) || math.IsInf(fraction, 0) {
		return fmt.Errorf("%w: filter fraction %v", ErrConfig, fraction)
	}
	bar := fraction * r.Subjects[ref].MeanReturn
	for i := range r.Subjects {
		ok := r.Subjects[i].MeanReturn >= bar
		r.Subjects[i].Passed = &ok
	}
	r.FilterReference, r.FilterFraction = &ref, fraction
	return nil
}
