// Package checkpoint owns the one checkpoint format of every training
// algorithm: an archive (skills/npz) holding manifest.json (what the run is:
// algorithm, task, data digest, contract, iteration, the algorithm's
// configuration and its small state as JSON) and named float32 or float64
// arrays (networks, optimiser moments, rewards, weights). The algorithm
// decides what its configuration, state and arrays are; this package
// writes them atomically, reads them back with their checksums, sizes and
// names checked, and refuses anything else.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/npz"
	"github.com/dualforce/dualforce/trainer/prep"
)

// FormatVersion is the layout of the manifest and archive this package
// writes and reads.
const FormatVersion = 1

// ManifestMember is the archive member holding the manifest.
const ManifestMember = "manifest.json"

// File is a run's checkpoint.
type File struct {
	// Algorithm names the loop that wrote it ("smodice", ...).
	Algorithm string
	Task      string
	// Digest identifies the raw data the run trains on.
	Digest [sha256.Size]byte
	// Contract carries the fitted normaliser and feature statistics.
	Contract  skills.Contract
	Iteration int
	// Config is the algorithm's configuration, State its small state
	// (generator, step counts, reports); both JSON objects.
	Config, State json.RawMessage
	// Float32 and Float64 are the named arrays.
	Float32 map[string][]float32
	Float64 map[string][]float64
}

type manifest struct {
	FormatVersion int             `json:"format_version"`
	Algorithm     string          `json:"algorithm"`
	Task          string          `json:"task"`
	Digest        string          `json:"data_sha256"`
	Contract      skills.Contract `json:"contract"`
	Iteration     int             `json:"iteration"`
	Config        json.RawMessage `json:"config"`
	State         json.RawMessage `json:"state"`
	Arrays        []array         `json:"arrays"`
}

type array struct {
	Name  string `json:"name"`
	Dtype string `json:"dtype"`
	Len   int    `json:"len"`
}

// ErrCheckpoint wraps every reason a checkpoint is refused.
var ErrCheckpoint = errors.New("checkpoint: bad checkpoint")

// Limits bound what a reader allocates.
var Limits = npz.Limits{MaxFileBytes: 4 << 30, MaxMembers: 1024, MaxMemberBytes: 2 << 30, MaxTotalBytes: 4 << 30}

// maxManifestBytes bounds the manifest.
const maxManifestBytes = 16 << 20

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.]{0,127}$`)

func (f *File) manifest() (manifest, error) {
	m := manifest{
		FormatVersion: FormatVersion, Algorithm: f.Algorithm, Task: f.Task, Digest: hex.EncodeToString(f.Digest[:]),
		Contract: f.Contract, Iteration: f.Iteration, Config: f.Config, State: f.State,
	}
	// Arrays in name order, so that a checkpoint is reproducible byte for byte.
	for _, k := range slices.Sorted(maps.Keys(f.Float32)) {
		m.Arrays = append(m.Arrays, array{Name: k, Dtype: npz.DtypeFloat32, Len: len(f.Float32[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(f.Float64)) {
		m.Arrays = append(m.Arrays, array{Name: k, Dtype: npz.DtypeFloat64, Len: len(f.Float64[k])})
	}
	return m, m.validate()
}

// validate checks everything but the arrays' contents.
func (m *manifest) validate() error {
	switch {
	case m.FormatVersion != FormatVersion:
		return fmt.Errorf("format version %d, this reader knows %d", m.FormatVersion, FormatVersion)
	case !nameRE.MatchString(m.Algorithm):
		return fmt.Errorf("algorithm %q", m.Algorithm)
	case m.Iteration < 0:
		return fmt.Errorf("iteration %d", m.Iteration)
	case !json.Valid(m.Config) || !json.Valid(m.State):
		return errors.New("config or state is not JSON")
	}
	if d, err := hex.DecodeString(m.Digest); err != nil || len(d) != sha256.Size {
		return fmt.Errorf("data digest %q", m.Digest)
	}
	if err := m.Contract.Validate(); err != nil {
		return err
	}
	if err := prep.CheckTask(m.Task, m.Contract); err != nil {
		return err
	}
	seen := make(map[string]bool, len(m.Arrays))
	for _, a := range m.Arrays {
		switch {
		case !nameRE.MatchString(a.Name) || seen[a.Name]:
			return fmt.Errorf("array name %q bad or repeated", a.Name)
		case a.Dtype != npz.DtypeFloat32 && a.Dtype != npz.DtypeFloat64:
			return fmt.Errorf("array %q has dtype %q", a.Name, a.Dtype)
		case a.Len < 0:
			return fmt.Errorf("array %q has %d values", a.Name, a.Len)
		}
		seen[a.Name] = true
	}
	return nil
}

// Encode writes f as a checkpoint archive to w.
func Encode(w io.Writer, f *File) error {
	m, err := f.manifest()
	if err != nil {
		return fmt.Errorf("%w: refusing to write: %w", ErrCheckpoint, err)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // keep "<f4" readable
	enc.SetIndent("", " ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("checkpoint: encode manifest: %w", err)
	}
	zw := npz.NewWriter(w)
	if err := zw.Raw(ManifestMember, js.Bytes()); err != nil {
		return err
	}
	for _, a := range m.Arrays {
		if a.Dtype == npz.DtypeFloat32 {
			err = npz.WriteArray(zw, a.Name, []int{a.Len}, f.Float32[a.Name])
		} else {
			err = npz.WriteArray(zw, a.Name, []int{a.Len}, f.Float64[a.Name])
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// Write replaces path atomically with f.
func Write(path string, f *File) error {
	return skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error { return Encode(w, f) })
}

// Read reads and checks the checkpoint at path.
func Read(path string) (*File, error) {
	f, err := npz.DecodeFile(path, Decode)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return f, nil
}

// Decode reads and checks a checkpoint of size bytes from r: the archive
// (sizes, CRC-32 of every member), the manifest, and exactly the arrays it
// lists, of the dtypes and lengths it says.
func Decode(r io.ReaderAt, size int64) (*File, error) {
	f, err := decode(r, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return f, nil
}

func decode(r io.ReaderAt, size int64) (*File, error) {
	zr, err := npz.NewReader(r, size, Limits)
	if err != nil {
		return nil, err
	}
	js, err := zr.Raw(ManifestMember, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var m manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if dec.More() {
		return nil, errors.New("manifest: data after the object")
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if len(zr.Names()) != len(m.Arrays)+1 {
		return nil, fmt.Errorf("%d members for %d arrays and the manifest", len(zr.Names()), len(m.Arrays))
	}
	f := &File{
		Algorithm: m.Algorithm, Task: m.Task, Contract: m.Contract, Iteration: m.Iteration,
		Config: m.Config, State: m.State, Float32: map[string][]float32{}, Float64: map[string][]float64{},
	}
	d, _ := hex.DecodeString(m.Digest)
	copy(f.Digest[:], d)
	for _, a := range m.Arrays {
		if a.Dtype == npz.DtypeFloat32 {
			f.Float32[a.Name], err = npz.ReadArray[float32](zr, a.Name, []int{a.Len})
		} else {
			f.Float64[a.Name], err = npz.ReadArray[float64](zr, a.Name, []int{a.Len})
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ErrArray reports an array a loop needs that the checkpoint lacks or holds
// in another length.
var ErrArray = fmt.Errorf("%w: array missing or of another length", ErrCheckpoint)

// Float32Array returns the float32 array name, which must hold n values
// (n < 0: any number).
func (f *File) Float32Array(name string, n int) ([]float32, error) {
	x, ok := f.Float32[name]
	if !ok || n >= 0 && len(x) != n {
		return nil, fmt.Errorf("%w: %q has %d values, want %d", ErrArray, name, len(x), n)
	}
	return x, nil
}
