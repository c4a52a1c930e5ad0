package datafile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/npz"
	"github.com/dualforce/dualforce/trainer/dataset"
)

// Offline is an offline archive in memory: D_O as the trainer uses it, plus the withheld columns.
type Offline struct {
	Manifest Manifest
	Data     dataset.Offline
	Withheld Withheld
}

// Withheld are the columns the algorithm must never train on: the task reward (for off-policy
// evaluation), the expert flag and behaviour label (diagnostics), and the ground-truth base pose
// at each transition's first state (evaluation plots).
type Withheld struct {
	Reward       []float32 // N
	IsExpert     []bool    // N
	Mode         []int32   // N, index into Manifest.Modes
	BasePosition []float32 // N x 3, world frame, m (z is the base height)
	BaseRPY      []float32 // N x 3, roll, pitch, yaw, rad
}

// Expert is an expert archive in memory: D_E, states only.
type Expert struct {
	Manifest Manifest
	Data     dataset.Expert
}

// Member names of the archives.
// memberManifest is the manifest member; the others are arrays, stored as
// "<name>.npy".
const (
	memberManifest     = "manifest.json"
	memberObs          = "observations"
	memberAct          = "actions"
	memberNextObs      = "next_observations"
	memberTerminals    = "terminals"
	memberTimeouts     = "timeouts"
	memberStarts       = "episode_starts"
	memberRewards      = "rewards"
	memberIsExpert     = "is_expert"
	memberModes        = "modes"
	memberBasePosition = "base_position"
	memberBaseRPY      = "base_rpy"
)

// maxManifestBytes bounds the manifest a reader accepts.
const maxManifestBytes = 16 << 20

// ExpertPath is the conventional expert archive next to an offline archive: x.npz -> x_expert.npz.
func ExpertPath(offline string) string { return strings.TrimSuffix(offline, ".npz") + "_expert.npz" }

// Validate checks the archive's invariants: the dataset's own (shapes, finite values, actions
// in range, an initial state), the widths the contract implies, the withheld columns' shapes and
// values, and that the labels agree with the manifest's modes and counts.
func (o *Offline) Validate() error {
	m := &o.Manifest
	if err := m.validate(KindOffline); err != nil {
		return err
	}
	d := &o.Data
	if d.ObsDim != m.Contract.Layout.Dim() || d.ActDim != skills.NumJoints {
		return fmt.Errorf("%w: data is %d-dim observations, %d-dim actions; contract %q wants %d and %d",
			ErrFormat, d.ObsDim, d.ActDim, m.Contract.Layout.Name, m.Contract.Layout.Dim(), skills.NumJoints)
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	n := d.Len()
	if n != m.Transitions {
		return fmt.Errorf("%w: %d transitions, manifest says %d", ErrFormat, n, m.Transitions)
	}
	w := &o.Withheld
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"rewards", len(w.Reward), n}, {"is_expert", len(w.IsExpert), n}, {"modes", len(w.Mode), n},
		{"base_position", len(w.BasePosition), 3 * n}, {"base_rpy", len(w.BaseRPY), 3 * n},
	} {
		if c.got != c.want {
			return fmt.Errorf("%w: %w", ErrFormat, &dataset.ShapeError{Field: c.name, Len: c.got, Want: c.want})
		}
	}
	for _, c := range []struct {
		name string
		x    []float32
		cols int
	}{{"rewards", w.Reward, 1}, {"base_position", w.BasePosition, 3}, {"base_rpy", w.BaseRPY, 3}} {
		if err := dataset.CheckFinite(c.name, c.x, c.cols); err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	perMode := make([]int, len(m.Modes))
	expert := 0
	for i, md := range w.Mode {
		if md < 0 || int(md) >= len(m.Modes) {
			return fmt.Errorf("%w: modes[%d] = %d, the manifest has %d modes", ErrFormat, i, md, len(m.Modes))
		}
		if w.IsExpert[i] != m.Modes[md].Expert {
			return fmt.Errorf("%w: is_expert[%d] = %v but mode %q is expert=%v", ErrFormat, i, w.IsExpert[i], m.Modes[md].Name, m.Modes[md].Expert)
		}
		perMode[md]++
		if w.IsExpert[i] {
			expert++
		}
	}
	for i, md := range m.Modes {
		if perMode[i] != md.Transitions {
			return fmt.Errorf("%w: mode %q labels %d transitions, manifest says %d", ErrFormat, md.Name, perMode[i], md.Transitions)
		}
	}
	if expert != m.ExpertTransitions {
		return fmt.Errorf("%w: %d expert transitions, manifest says %d", ErrFormat, expert, m.ExpertTransitions)
	}
	return nil
}

// Validate checks the expert archive's invariants.
func (e *Expert) Validate() error {
	if err := e.Manifest.validate(KindExpert); err != nil {
		return err
	}
	if e.Data.ObsDim != e.Manifest.Contract.Layout.Dim() {
		return fmt.Errorf("%w: %d-dim states, contract %q wants %d", ErrFormat, e.Data.ObsDim, e.Manifest.Contract.Layout.Name, e.Manifest.Contract.Layout.Dim())
	}
	if err := e.Data.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if e.Data.Len() != e.Manifest.Transitions {
		return fmt.Errorf("%w: %d states, manifest says %d", ErrFormat, e.Data.Len(), e.Manifest.Transitions)
	}
	return nil
}

// member is one array of an archive to write.
type member struct {
	name, doc string
	shape     []int
	dtype     string
	write     func(w *npz.Writer) error
}

func array[T npz.Element](name, doc string, shape []int, data []T) member {
	dtype, _ := npz.Dtype[T]()
	return member{name: name, doc: doc, shape: shape, dtype: dtype, write: func(w *npz.Writer) error { return npz.WriteArray(w, name, shape, data) }}
}

// WriteOffline validates o and replaces path with it atomically. It fills o.Manifest.Columns.
func WriteOffline(path string, o *Offline) error {
	if err := o.Validate(); err != nil {
		return err
	}
	n, d := o.Data.Len(), o.Data.ObsDim
	members := []member{
		array(memberObs, "raw observation s (contract layout)", []int{n, d}, o.Data.Obs),
		array(memberAct, "action a in [-1,1]: joint target = default_pose + action_scale * a", []int{n, o.Data.ActDim}, o.Data.Act),
		array(memberNextObs, "raw observation s' after 20 ms", []int{n, d}, o.Data.NextObs),
		array(memberTerminals, "s' is a fall (absorbing)", []int{n}, o.Data.Terminal),
		array(memberTimeouts, "the episode was cut after this transition (time limit or quota); s' is a real successor", []int{n}, o.Data.Timeout),
		array(memberStarts, "s is an initial state", []int{n}, o.Data.EpisodeStart),
		array(memberRewards, "withheld task reward (manifest reward)", []int{n}, o.Withheld.Reward),
		array(memberIsExpert, "withheld: the transition comes from the expert (diagnostics only)", []int{n}, o.Withheld.IsExpert),
		array(memberModes, "withheld: behaviour label, index into manifest modes", []int{n}, o.Withheld.Mode),
		array(memberBasePosition, "withheld: ground-truth base position at s, world frame (m); z is the base height", []int{n, 3}, o.Withheld.BasePosition),
		array(memberBaseRPY, "withheld: ground-truth base roll, pitch, yaw at s (rad)", []int{n, 3}, o.Withheld.BaseRPY),
	}
	return writeArchive(path, &o.Manifest, members)
}

// WriteExpert validates e and replaces path with it atomically. It fills e.Manifest.Columns.
func WriteExpert(path string, e *Expert) error {
	if err := e.Validate(); err != nil {
		return err
	}
	members := []member{array(memberObs, "raw expert state (contract layout)", []int{e.Data.Len(), e.Data.ObsDim}, e.Data.Obs)}
	return writeArchive(path, &e.Manifest, members)
}

func writeArchive(path string, m *Manifest, members []member) (err error) {
	m.Columns = m.Columns[:0]
	for _, mb := range members {
		m.Columns = append(m.Columns, Column{Name: mb.name, DType: mb.dtype, Shape: mb.shape, Doc: mb.doc})
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("datafile: encode manifest: %w", err)
	}
	err = skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		zw := npz.NewWriter(w)
		if err := zw.Raw(memberManifest, manifest); err != nil {
			return err
		}
		for _, mb := range members {
			if err := mb.write(zw); err != nil {
				return err
			}
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("datafile: %w", err)
	}
	return nil
}

// ReadManifest reads only the manifest of an archive of either kind, validated, to tell what
// the archive holds without loading its arrays.
func ReadManifest(path string) (*Manifest, error) {
	return readFile(path, func(r io.ReaderAt, size int64) (*Manifest, error) {
		_, m, err := openArchive(r, size, "")
		return m, err
	})
}

// ReadOffline reads and fully validates an offline archive.
func ReadOffline(path string) (*Offline, error) { return readFile(path, DecodeOffline) }

// ReadExpert reads and fully validates an expert archive.
func ReadExpert(path string) (*Expert, error) { return readFile(path, DecodeExpert) }

func readFile[T any](path string, decode func(io.ReaderAt, int64) (T, error)) (T, error) {
	v, err := npz.DecodeFile(path, decode)
	if err != nil {
		return v, fmt.Errorf("datafile: %w", err)
	}
	return v, nil
}

// openArchive opens a zip and reads and validates its manifest as one of kind ("" accepts
// either kind).
func openArchive(r io.ReaderAt, size int64, kind string) (*npz.Reader, *Manifest, error) {
	a, err := npz.NewReader(r, size, npz.Limits{})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if !a.Has(memberManifest) {
		return nil, nil, fmt.Errorf("%w: no %s member", ErrFormat, memberManifest)
	}
	raw, err := a.Raw(memberManifest, maxManifestBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrFormat, memberManifest, err)
	}
	if kind == "" && (m.Kind == KindOffline || m.Kind == KindExpert) {
		kind = m.Kind
	}
	if err := m.validate(kind); err != nil {
		return nil, nil, err
	}
	return a, &m, nil
}

// columnReader reads array members one after the other, keeping the first error.
type columnReader struct {
	a   *npz.Reader
	err error
}

func readInto[T npz.Element](rd *columnReader, dst *[]T, name string, shape ...int) {
	if rd.err != nil {
		return
	}
	if !rd.a.Has(name + npz.NpySuffix) {
		rd.err = fmt.Errorf("%w: no %s%s member", ErrFormat, name, npz.NpySuffix)
		return
	}
	if *dst, rd.err = npz.ReadArray[T](rd.a, name, shape); rd.err != nil {
		rd.err = fmt.Errorf("%w: %w", ErrFormat, rd.err)
	}
}

// maxRows bounds the rows a manifest may declare before any array is read.
const maxRows = math.MaxInt32

// DecodeOffline reads and fully validates an offline archive of size bytes from r.
func DecodeOffline(r io.ReaderAt, size int64) (*Offline, error) {
	a, m, err := openArchive(r, size, KindOffline)
	if err != nil {
		return nil, err
	}
	n, d, k := m.Transitions, m.Contract.Layout.Dim(), skills.NumJoints
	if n > maxRows {
		return nil, fmt.Errorf("%w: %d rows", ErrFormat, n)
	}
	o := &Offline{Manifest: *m, Data: dataset.Offline{ObsDim: d, ActDim: k}}
	od, w := &o.Data, &o.Withheld
	rd := &columnReader{a: a}
	readInto(rd, &od.Obs, memberObs, n, d)
	readInto(rd, &od.Act, memberAct, n, k)
	readInto(rd, &od.NextObs, memberNextObs, n, d)
	readInto(rd, &od.Terminal, memberTerminals, n)
	readInto(rd, &od.Timeout, memberTimeouts, n)
	readInto(rd, &od.EpisodeStart, memberStarts, n)
	readInto(rd, &w.Reward, memberRewards, n)
	readInto(rd, &w.IsExpert, memberIsExpert, n)
	readInto(rd, &w.Mode, memberModes, n)
	readInto(rd, &w.BasePosition, memberBasePosition, n, 3)
	readInto(rd, &w.BaseRPY, memberBaseRPY, n, 3)
	if rd.err != nil {
		return nil, rd.err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// DecodeExpert reads and fully validates an expert archive of size bytes from r.
func DecodeExpert(r io.ReaderAt, size int64) (*Expert, error) {
	a, m, err := openArchive(r, size, KindExpert)
	if err != nil {
		return nil, err
	}
	if m.Transitions > maxRows {
		return nil, fmt.Errorf("%w: %d rows", ErrFormat, m.Transitions)
	}
	d := m.Contract.Layout.Dim()
	e := &Expert{Manifest: *m, Data: dataset.Expert{ObsDim: d}}
	rd := &columnReader{a: a}
	if readInto(rd, &e.Data.Obs, memberObs, m.Transitions, d); rd.err != nil {
		return nil, rd.err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}
