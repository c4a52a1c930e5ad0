package prep

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"unsafe"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// Task names.
const (
	TaskLocomotion = "locomotion"
	TaskNavigation = "navigation"
)

// Task is what the trainer knows of a task: the observation layout its data
// are collected and trained in, the diversity features phi (fields of that
// layout), and the task's defaults for the diversity algorithms.
type Task struct {
	Name   string
	Layout string
	// Features are the fields phi projects onto (skills.DefaultFeatureFields).
	Features []string
	// L0 and Eps are Dual-Force's distance scale and constraint bound
	// (spec/dualforce.md, paper settings).
	L0, Eps float64
	// Expert is the SMODICE-expert's defaults on this task where they are
	// not every method's.
	Expert ExpertDefaults
}

// ExpertDefaults are a task's defaults for train smodice's weight pass and
// policy learner (ours). The zero value is every method's: the paper's
// softmax, every row re-evaluated in every pass, the policy learner's own
// Adam rate and averaging.
type ExpertDefaults struct {
	// MinESSShare caps the weights (dice.ValueConfig.MinESSShare). On the
	// paper-scale navigation set the paper's softmax fell onto a few
	// transitions again and again and the SMODICE-expert reached the goal in
	// 87% (seed 1) and 27% (seed 2) of 30 rollouts; capped at the top 1%, in
	// 90% and 77%, none falling (seed 3: 73%, 1 of 30 falling).
	MinESSShare float64
	// RefreshRows is the weight pass's block (dice.ValueConfig.RefreshRows).
	// Every navigation SMODICE-expert reported was trained with blocks of
	// 131,072 rows (2000 iterations in about 32 minutes on two cores); the
	// exact pass on the paper-scale set would take about 2.8 hours.
	RefreshRows int
	// PolicyLR, when positive, and PolicyAverage replace the policy
	// learner's Adam rate and averaging (wbc.Config.LR, Average). The
	// navigation SMODICE-expert at the learner's 1e-3 and averaged
	// parameters: 60% at the goal, 2 of 30 falling (seed 2, capped),
	// against 77%, none falling, at 3e-4 and the last iterate.
	PolicyLR, PolicyAverage float64
}

// Tasks is the registry of tasks by name.
var Tasks = map[string]Task{
	TaskLocomotion: {Name: TaskLocomotion, Layout: skills.LayoutLocomotion48, L0: 6, Eps: 4},
	TaskNavigation: {Name: TaskNavigation, Layout: skills.LayoutNavigation171, L0: 4, Eps: 1,
		Expert: ExpertDefaults{MinESSShare: 0.01, RefreshRows: 131072, PolicyLR: 3e-4}},
}

func init() {
	for name, t := range Tasks {
		fields, err := skills.DefaultFeatureFields(t.Layout)
		if err != nil {
			panic("prep: task " + name + ": " + err.Error())
		}
		t.Features = fields
		Tasks[name] = t
	}
}

// LookupTask returns the registry's task name.
func LookupTask(name string) (Task, error) {
	t, ok := Tasks[name]
	if !ok {
		return Task{}, fmt.Errorf("%w: %q (want %q or %q)", ErrUnknownTask, name, TaskLocomotion, TaskNavigation)
	}
	return t, nil
}

// Errors of the checks run before training.
var (
	// ErrUnknownTask reports a task name other than TaskLocomotion and
	// TaskNavigation.
	ErrUnknownTask = errors.New("prep: unknown task")
	// ErrTaskMismatch reports a dataset recorded for another task, or in
	// another observation layout, than the one requested.
	ErrTaskMismatch = errors.New("prep: dataset does not match the task")
	// ErrContract reports a contract that does not fit the data it came with.
	ErrContract = errors.New("prep: contract does not fit the data")
)

// CheckTask reports whether c is a contract of task: its observation
// layout is the task's. Its feature fields may be any of that layout's (the
// task's by default; Inputs.Features chooses others): Contract.Validate,
// which every caller runs, checks them.
func CheckTask(task string, c skills.Contract) error {
	t, err := LookupTask(task)
	if err != nil {
		return err
	}
	if c.Layout.Name != t.Layout {
		return fmt.Errorf("%w: task %q trains on layout %q, the dataset is in %q", ErrTaskMismatch, task, t.Layout, c.Layout.Name)
	}
	return skills.CheckFeedable(c.Layout)
}

// Inputs are the datasets as loaded, before any statistics are fitted.
type Inputs struct {
	// Task is the requested task; it must match the layout of Contract.
	Task string
	// World is the world the data were collected in (datafile.Manifest.World; "" for the
	// task's), where training checks its policies.
	World string
	// Contract is what the data was collected under (from the offline
	// dataset's manifest); its normaliser and feature statistics are
	// replaced by the fitted ones.
	Contract skills.Contract
	Offline  *dataset.Offline
	// Expert holds expert states; nil for behaviour cloning, which needs none.
	Expert *dataset.Expert
	// IsExpert labels offline transitions for the expert-mass diagnostic
	// only; nil when unknown.
	IsExpert []bool
	// Behaviours labels every offline transition with the behaviour that
	// made it, for the weight-by-behaviour diagnostic only; nil when unknown.
	Behaviours *Behaviours
	// Features, when not nil, are the fields phi projects onto instead of the
	// task's (ours: navigation's base velocities put its routes close
	// together; docs/results.md).
	Features []string
}

// Behaviours are withheld behaviour labels: Names[Of[i]] made transition i.
type Behaviours struct {
	Names []string
	Of    []int32
}

// ErrBehaviours reports behaviour labels that do not fit the data.
var ErrBehaviours = errors.New("prep: behaviour labels do not fit the data")

func (b *Behaviours) check(n int) error {
	if len(b.Of) != n {
		return fmt.Errorf("%w: %d labels for %d transitions", ErrBehaviours, len(b.Of), n)
	}
	for i, m := range b.Of {
		if m < 0 || int(m) >= len(b.Names) {
			return fmt.Errorf("%w: transition %d has behaviour %d of %d", ErrBehaviours, i, m, len(b.Names))
		}
	}
	return nil
}

// Mass returns the weight w puts on each behaviour, in the order of Names.
func (b *Behaviours) Mass(w []float64) []float64 {
	mass := make([]float64, len(b.Names))
	for i, m := range b.Of {
		mass[m] += w[i]
	}
	return mass
}

// MeanOf returns the mean of x (one value per transition) over each behaviour's
// transitions, in the order of Names; NaN for a behaviour without any.
func (b *Behaviours) MeanOf(x []float32) []float64 {
	sum := make([]float64, len(b.Names))
	count := make([]int, len(b.Names))
	for i, m := range b.Of {
		sum[m] += float64(x[i])
		count[m]++
	}
	for k := range sum {
		sum[k] /= float64(count[k]) // 0/0 is NaN: no transitions
	}
	return sum
}

// Share returns each behaviour's share of the transitions, in the order of Names.
func (b *Behaviours) Share() []float64 {
	share := make([]float64, len(b.Names))
	for _, m := range b.Of {
		share[m] += 1 / float64(len(b.Of))
	}
	return share
}

// FromFiles checks that the offline archive (and the expert archive, when
// given) were recorded for task, under the same contract layout, and returns
// the training inputs. task "" means the offline archive's own task.
func FromFiles(task string, offline *datafile.Offline, expert *datafile.Expert) (Inputs, error) {
	m := &offline.Manifest
	if task == "" {
		task = m.Task
	}
	if _, err := LookupTask(task); err != nil {
		return Inputs{}, err
	}
	if m.Task != task {
		return Inputs{}, fmt.Errorf("%w: offline dataset was recorded for task %q, not %q", ErrTaskMismatch, m.Task, task)
	}
	in := Inputs{Task: task, World: m.World(), Contract: m.Contract, Offline: &offline.Data, IsExpert: offline.Withheld.IsExpert}
	if offline.Withheld.Mode != nil {
		in.Behaviours = &Behaviours{Of: offline.Withheld.Mode}
		for _, md := range m.Modes {
			in.Behaviours.Names = append(in.Behaviours.Names, md.Name)
		}
	}
	if expert == nil {
		return in, nil
	}
	em := &expert.Manifest
	if em.Task != task {
		return Inputs{}, fmt.Errorf("%w: expert dataset was recorded for task %q, not %q", ErrTaskMismatch, em.Task, task)
	}
	if em.Contract.Layout.Name != m.Contract.Layout.Name {
		return Inputs{}, fmt.Errorf("%w: expert dataset is in layout %q, offline dataset in %q", ErrTaskMismatch, em.Contract.Layout.Name, m.Contract.Layout.Name)
	}
	if err := skills.CheckFeedable(em.Contract.Layout, m.Contract.Layout); err != nil {
		return Inputs{}, fmt.Errorf("%w: expert dataset layout: %w", ErrTaskMismatch, err)
	}
	in.Expert = &expert.Data
	return in, nil
}

// Data are the prepared training inputs.
type Data struct {
	Task string
	// World is Inputs.World.
	World string
	// Contract is the input contract with the normaliser fitted on the
	// offline observations and the feature statistics fitted on their
	// projections: the contract of every bank trained on these data.
	Contract skills.Contract
	// Offline is D_O with standardised observations and next observations.
	Offline *dataset.Offline
	// Expert is D_E, standardised with the offline statistics; nil when
	// prepared without an expert set.
	Expert []float32
	// Phi holds the standardised features phi(s) of every offline state
	// (rows of FeatureDim values).
	Phi        []float32
	FeatureDim int
	// IsExpert and Behaviours are for diagnostics only (nil when unknown).
	IsExpert   []bool
	Behaviours *Behaviours
	// Digest identifies the raw data, so a run is never resumed on other data.
	Digest [sha256.Size]byte
}

// Prepare validates the inputs (every check runs before any training:
// shapes, finite values, action range, initial states, a non-empty expert
// set when one is given, the contract against the data and the task) and
// standardises them.
func Prepare(in Inputs) (*Data, error) {
	if in.Offline == nil {
		return nil, fmt.Errorf("prep: no offline dataset: %w", dataset.ErrEmptyOffline)
	}
	if in.Expert != nil {
		if err := dataset.CheckPair(in.Offline, in.Expert); err != nil {
			return nil, err
		}
	} else if err := in.Offline.Validate(); err != nil {
		return nil, err
	}
	c := in.Contract
	if err := CheckTask(in.Task, c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrContract, err)
	}
	o := in.Offline
	if o.ObsDim != c.Layout.Dim() || o.ActDim != skills.NumJoints {
		return nil, fmt.Errorf("%w: data has %d-dim observations and %d-dim actions, layout %q has %d and the robot %d joints",
			ErrContract, o.ObsDim, o.ActDim, c.Layout.Name, c.Layout.Dim(), skills.NumJoints)
	}
	if in.IsExpert != nil && len(in.IsExpert) != o.Len() {
		return nil, &dataset.ShapeError{Field: "is_expert", Len: len(in.IsExpert), Want: o.Len()}
	}
	if in.Behaviours != nil {
		if err := in.Behaviours.check(o.Len()); err != nil {
			return nil, err
		}
	}

	norm, err := skills.FitStats(o.Obs, o.ObsDim, skills.DefaultNormEpsilon)
	if err != nil {
		return nil, err
	}
	c.Normaliser = norm
	fields := c.Features.Fields
	if in.Features != nil {
		fields = in.Features
	}
	p, err := Project(o, c.Layout, fields)
	if err != nil {
		return nil, err
	}
	c.Features = p.Features

	d := &Data{
		Task: in.Task, World: in.World, Contract: c, Phi: p.Phi, FeatureDim: p.Features.Dim(c.Layout), IsExpert: in.IsExpert, Behaviours: in.Behaviours,
		Digest: digest(o, in.Expert),
		Offline: &dataset.Offline{
			ObsDim: o.ObsDim, ActDim: o.ActDim,
			Obs: append([]float32(nil), o.Obs...), Act: o.Act, NextObs: append([]float32(nil), o.NextObs...),
			Terminal: o.Terminal, Timeout: o.Timeout, EpisodeStart: o.EpisodeStart,
		},
	}
	if err := standardise(norm, d.Offline.Obs, d.Offline.NextObs); err != nil {
		return nil, err
	}
	if in.Expert != nil {
		d.Expert = append([]float32(nil), in.Expert.Obs...)
		if err := standardise(norm, d.Expert); err != nil {
			return nil, err
		}
	}
	// Standardising is finite for finite input (std is floored), but a
	// value near the float32 limit can still overflow: check, never trust.
	for _, x := range []struct {
		name string
		v    []float32
	}{{"standardised observations", d.Offline.Obs}, {"standardised next observations", d.Offline.NextObs}, {"standardised expert states", d.Expert}} {
		if err := dataset.CheckFinite(x.name, x.v, o.ObsDim); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Projection is phi over an offline set: the projected fields with the
// statistics fitted on them, and every state's standardised features.
type Projection struct {
	Features skills.Features
	// Phi holds Features.Dim values per offline state.
	Phi []float32
}

// Project computes phi onto fields of layout l for every state of the raw
// (not standardised) offline set o, standardised with statistics fitted on
// o: what Prepare does for the diversity features.
func Project(o *dataset.Offline, l skills.Layout, fields []string) (Projection, error) {
	identity := skills.Features{Fields: fields}
	identity.Stats = skills.IdentityStats(identity.Dim(l))
	proj, err := skills.NewProjector(l, identity)
	if err != nil {
		return Projection{}, fmt.Errorf("%w: %w", ErrContract, err)
	}
	n, f := o.Len(), proj.Dim()
	phi := make([]float32, n*f)
	for i := range n {
		_ = proj.Unstandardised(o.Obs[i*o.ObsDim:(i+1)*o.ObsDim], phi[i*f:(i+1)*f])
	}
	stats, err := skills.FitStats(phi, f, skills.DefaultNormEpsilon)
	if err != nil {
		return Projection{}, err
	}
	if err := standardise(stats, phi); err != nil {
		return Projection{}, err
	}
	return Projection{Features: skills.Features{Fields: fields, Stats: stats}, Phi: phi}, nil
}

// WithFeatures returns a copy of d whose diversity features are p's (the
// datasets are shared, not copied): for a run whose phi differs from d's,
// such as the FRE run a Dual-Force run reads.
func (d *Data) WithFeatures(p Projection) *Data {
	c := *d
	c.Contract.Features, c.Phi, c.FeatureDim = p.Features, p.Phi, p.Features.Dim(d.Contract.Layout)
	return &c
}

// standardise applies stats to every row of each of xs in place.
func standardise(stats skills.Stats, xs ...[]float32) error {
	norm, err := skills.NewNormaliser(stats)
	if err != nil {
		return err
	}
	dim := norm.Dim()
	for _, x := range xs {
		for r := 0; r+dim <= len(x); r += dim {
			_ = norm.Apply(x[r : r+dim])
		}
	}
	return nil
}

// digest hashes the raw datasets' shapes and contents.
func digest(o *dataset.Offline, e *dataset.Expert) [sha256.Size]byte {
	h := sha256.New()
	putInts(h, o.ObsDim, o.ActDim, o.Len())
	putFloats(h, o.Obs)
	putFloats(h, o.Act)
	putFloats(h, o.NextObs)
	for _, col := range [][]bool{o.Terminal, o.Timeout, o.EpisodeStart} {
		putBools(h, col)
	}
	if e != nil {
		putInts(h, e.ObsDim, e.Len())
		putFloats(h, e.Obs)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func putInts(h hash.Hash, v ...int) {
	var b [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
}

// putFloats hashes the float32 bits in the machine's byte order (every
// supported target is little-endian).
func putFloats(h hash.Hash, x []float32) {
	if len(x) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)))
	}
}

func putBools(h hash.Hash, x []bool) {
	b := make([]byte, len(x))
	for i, v := range x {
		if v {
			b[i] = 1
		}
	}
	h.Write(b)
}
