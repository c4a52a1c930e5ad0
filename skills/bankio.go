package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dualforce/dualforce/skills/npz"
)

// Bank file format v2
//
// A bank is one .npz file: a zip archive (members stored or deflated) that
// numpy.load opens directly. It holds
//
//   - manifest.json: the manifest below (UTF-8 JSON);
//   - one member "<array>.npy" per array in the manifest's array table:
//     little-endian, C order, rank 1 or 2, float32 ("<f4") unless said
//     otherwise, written through skills/npz. numpy.load shows it under "<array>".
//
// Arrays, with K latents, Z = latent_dim and F the feature dim of phi:
//
//	slot<i>.layer<j>.W (Out, In), slot<i>.layer<j>.b (Out,)  skill slot i's policy
//	latents (K, Z)                          row r is latent r's z
//	latents.skill <i4 (K,)                  slot index i
//	latents.iteration <i4 (K,)              outer iteration k
//	latents.sigmoid_mu <f8 (K,), latents.phi <f8 (K,)
//	latents.offline_psi (K, F)
//	latents.online_return <f8 (K,)          NaN: not evaluated
//	latents.online_psi (K, F)               a row of NaN: not evaluated
//	latents.passed_filter <i4 (K,)          -1 not filtered, 0 failed, 1 passed
//	latents.goal_rate.<world> (K,)          goal-reach rate in evaluation world <world>, in [0,1];
//	                                        NaN: not measured there (one array per world)
//	fre/... (optional)                      the FRE encoder, named as in fre.go
//	fre/anchors (n, observation dim)        with the encoder: its anchor states
//
// Per-latent numbers live in arrays so that the manifest stays small
// whatever the number of latents; only names and tags, which few latents
// carry, stay in the manifest. The manifest lists every array with its dtype,
// shape and the SHA-256 of the whole member (the .npy bytes), checked on read.
// Members that the manifest does not list are refused.
//
// Manifest (JSON object): format_version (2), producer, head_layout and
// components (the policy head, see Policy: "mean,log_std" and no components
// for a single Gaussian, which a reader also takes with components 1;
// "mixture:mean,log_std,logit" and components 2..MaxComponents for a
// mixture), action_dim (12), latent_dim, contract (the Contract),
// slots[i].layers[j] = {in, out, act, w, b} (array names), latents = {count,
// labels: [{latent, name, tags}]} (only the latents that have a name or tags,
// by increasing index), goal_rate_worlds (optional: the worlds with a
// latents.goal_rate.<world> array, sorted, each measuring at least one
// latent; names as CheckWorldName), fre (optional: {heads, subsets, arrays:
// the encoder's array names}), arrays = [{name, dtype, shape, sha256}] sorted
// by name.
//
// Format v1, still read: head_layout "mean,log_std" and no components (v1
// knew single Gaussians only); every array is <f4; latents = {array:
// "latents", items: [LatentInfo...]} holds every per-latent number but goal
// rates (v1 has none) in the manifest (so about 60,000 latents overflow the
// reader's manifest limit); fre = {config, arrays named "fre.<name>"} only
// reserved the place of an encoder that no program wrote, and is dropped on
// read.
const (
	ManifestMember = "manifest.json"
	LatentsArray   = "latents"
	npySuffix      = npz.NpySuffix
	freArrayPrefix = "fre/"
	v1FREPrefix    = "fre."
)

// Names of the per-latent arrays of format v2.
const (
	latentsSkill        = "latents.skill"
	latentsIteration    = "latents.iteration"
	latentsSigmoidMu    = "latents.sigmoid_mu"
	latentsPhi          = "latents.phi"
	latentsOfflinePsi   = "latents.offline_psi"
	latentsOnlineReturn = "latents.online_return"
	latentsOnlinePsi    = "latents.online_psi"
	latentsPassed       = "latents.passed_filter"
	latentsGoalRate     = "latents.goal_rate." // + world name
)

// manifestCommon is what every format version's manifest holds.
type manifestCommon struct {
	FormatVersion int            `json:"format_version"`
	Producer      string         `json:"producer,omitempty"`
	HeadLayout    string         `json:"head_layout"`
	Components    *int           `json:"components,omitempty"` // nil: absent
	ActionDim     int            `json:"action_dim"`
	LatentDim     int            `json:"latent_dim"`
	Contract      Contract       `json:"contract"`
	Slots         []manifestSlot `json:"slots"`
}

// manifest is the format v2 manifest.
type manifest struct {
	manifestCommon
	Latents manifestLatents `json:"latents"`
	FRE     *manifestFRE    `json:"fre,omitempty"`
	Arrays  []arrayEntry    `json:"arrays"`
}

type manifestSlot struct {
	Layers []manifestLayer `json:"layers"`
}

type manifestLayer struct {
	In  int        `json:"in"`
	Out int        `json:"out"`
	Act Activation `json:"act"`
	W   string     `json:"w"`
	B   string     `json:"b"`
}

type manifestLatents struct {
	Count          int           `json:"count"`
	Labels         []latentLabel `json:"labels"`
	GoalRateWorlds []string      `json:"goal_rate_worlds,omitempty"`
}

// latentLabel carries the name and tags of one latent.
type latentLabel struct {
	Latent int      `json:"latent"`
	Name   string   `json:"name,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

type manifestFRE struct {
	Heads   int      `json:"heads"`
	Subsets int      `json:"subsets"`
	Arrays  []string `json:"arrays"`
}

// manifestV1 is the format v1 manifest.
type manifestV1 struct {
	manifestCommon
	Latents struct {
		Array string       `json:"array"`
		Items []LatentInfo `json:"items"`
	} `json:"latents"`
	FRE *struct {
		Config json.RawMessage `json:"config,omitempty"`
		Arrays []string        `json:"arrays"`
	} `json:"fre,omitempty"`
	Arrays []arrayEntry `json:"arrays"`
}

type arrayEntry struct {
	Name   string `json:"name"`
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	SHA256 string `json:"sha256"`
}

// namedArray is an array on its way to the archive: data is a []float32,
// []float64 or []int32.
type namedArray struct {
	name  string
	shape []int
	data  any
}

func slotArrayName(slot, layer int, which string) string {
	return fmt.Sprintf("slot%d.layer%d.%s", slot, layer, which)
}

// layout returns the manifest without its array table, and the arrays it
// references, in a fixed order.
func (b *Bank) layout() (manifest, []namedArray) {
	m := manifest{
		manifestCommon: manifestCommon{
			FormatVersion: FormatVersion,
			Producer:      b.Producer,
			HeadLayout:    HeadLayout,
			ActionDim:     NumJoints,
			LatentDim:     b.LatentDim,
			Contract:      b.Contract,
		},
		Latents: manifestLatents{Count: len(b.Latents), Labels: []latentLabel{}},
	}
	// A single Gaussian's manifest has no components key, so that its bytes
	// are those of the banks written before mixtures existed.
	if b.Components > 1 {
		m.HeadLayout, m.Components = MixtureHeadLayout, &b.Components
	}
	var arrays []namedArray
	for i, s := range b.Slots {
		var ms manifestSlot
		for j, l := range s.Policy.Layers {
			ml := manifestLayer{In: l.In, Out: l.Out, Act: l.Act, W: slotArrayName(i, j, "W"), B: slotArrayName(i, j, "b")}
			ms.Layers = append(ms.Layers, ml)
			arrays = append(arrays,
				namedArray{ml.W, []int{l.Out, l.In}, l.W},
				namedArray{ml.B, []int{l.Out}, l.B})
		}
		m.Slots = append(m.Slots, ms)
	}
	k, f := len(b.Latents), b.Contract.Features.Dim(b.Contract.Layout)
	z := make([]float32, 0, k*b.LatentDim)
	skill, iter, passed := make([]int32, k), make([]int32, k), make([]int32, k)
	sigmoidMu, phi, onlineReturn := make([]float64, k), make([]float64, k), make([]float64, k)
	offlinePsi, onlinePsi := make([]float32, 0, k*f), make([]float32, 0, k*f)
	nan32 := float32(math.NaN())
	for i, l := range b.Latents {
		in := &l.Info
		z = append(z, l.Z...)
		skill[i], iter[i] = int32(in.Skill), int32(in.Iteration)
		sigmoidMu[i], phi[i] = in.SigmoidMu, in.Phi
		offlinePsi = append(offlinePsi, in.OfflinePsi...)
		onlineReturn[i] = math.NaN()
		if in.OnlineReturn != nil {
			onlineReturn[i] = *in.OnlineReturn
		}
		if in.OnlinePsi != nil {
			onlinePsi = append(onlinePsi, in.OnlinePsi...)
		} else {
			for range f {
				onlinePsi = append(onlinePsi, nan32)
			}
		}
		passed[i] = -1
		if in.PassedFilter != nil {
			passed[i] = 0
			if *in.PassedFilter {
				passed[i] = 1
			}
		}
		if in.Name != "" || len(in.Tags) > 0 {
			m.Latents.Labels = append(m.Latents.Labels, latentLabel{Latent: i, Name: in.Name, Tags: in.Tags})
		}
	}
	arrays = append(arrays,
		namedArray{LatentsArray, []int{k, b.LatentDim}, z},
		namedArray{latentsSkill, []int{k}, skill},
		namedArray{latentsIteration, []int{k}, iter},
		namedArray{latentsSigmoidMu, []int{k}, sigmoidMu},
		namedArray{latentsPhi, []int{k}, phi},
		namedArray{latentsOfflinePsi, []int{k, f}, offlinePsi},
		namedArray{latentsOnlineReturn, []int{k}, onlineReturn},
		namedArray{latentsOnlinePsi, []int{k, f}, onlinePsi},
		namedArray{latentsPassed, []int{k}, passed},
	)
	m.Latents.GoalRateWorlds = b.goalRateWorlds()
	for _, w := range m.Latents.GoalRateWorlds {
		rates := make([]float32, k)
		for i := range b.Latents {
			r, ok := b.Latents[i].Info.GoalRate[w]
			if !ok {
				r = nan32
			}
			rates[i] = r
		}
		arrays = append(arrays, namedArray{latentsGoalRate + w, []int{k}, rates})
	}
	if b.FRE != nil {
		m.FRE = &manifestFRE{Heads: b.FRE.Net.Heads, Subsets: b.FRE.Subsets, Arrays: slices.Sorted(maps.Keys(b.FRE.Net.Arrays))}
		for _, name := range m.FRE.Arrays {
			a := b.FRE.Net.Arrays[name]
			arrays = append(arrays, namedArray{name, a.Shape, a.Data})
		}
		arrays = append(arrays, namedArray{FREAnchors, b.FRE.Anchors.Shape, b.FRE.Anchors.Data})
	}
	return m, arrays
}

// EncodeBank validates b and writes it to w in format v2. It refuses, before
// writing anything, a bank that ReadBank would refuse: an invalid one, or one
// over DefaultLimits (ErrTooLarge).
func EncodeBank(w io.Writer, b *Bank) error {
	return encodeBank(w, b, DefaultLimits)
}

func encodeBank(w io.Writer, b *Bank, lim Limits) error {
	if err := b.Validate(); err != nil {
		return fmt.Errorf("skills: refusing to write an invalid bank: %w", err)
	}
	m, arrays := b.layout()
	members := make([][]byte, len(arrays))
	for i, a := range arrays {
		raw, err := encodeArray(a.shape, a.data)
		if err != nil {
			return fmt.Errorf("skills: encode %s: %w", a.name, err)
		}
		sum := sha256.Sum256(raw)
		members[i] = raw
		m.Arrays = append(m.Arrays, arrayEntry{Name: a.name, Dtype: dtypeOf(a.data), Shape: a.shape, SHA256: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(m.Arrays, func(a, b arrayEntry) int { return strings.Compare(a.Name, b.Name) })
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // keep "<f4" readable
	enc.SetIndent("", " ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("skills: encode manifest: %w", err)
	}
	write := func(w io.Writer) error {
		zw := npz.NewWriter(w)
		if err := zw.Raw(ManifestMember, js.Bytes()); err != nil {
			return fmt.Errorf("skills: %w", err)
		}
		for i, a := range arrays {
			if err := zw.Raw(a.name+npySuffix, members[i]); err != nil {
				return fmt.Errorf("skills: %w", err)
			}
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("skills: %w", err)
		}
		return nil
	}
	if err := checkWriteLimits(js.Bytes(), arrays, members, write, lim); err != nil {
		return fmt.Errorf("skills: refusing to write a bank the reader would refuse: %w", err)
	}
	return write(w)
}

// checkWriteLimits applies the reader's Limits (a zero or negative field
// bounds nothing, as for the reader) to the members of a bank about to be
// written, and to the size of the file write would produce.
func checkWriteLimits(manifest []byte, arrays []namedArray, members [][]byte, write func(io.Writer) error, lim Limits) error {
	over := func(n, limit int64) bool { return limit > 0 && n > limit }
	if n := 1 + len(members); over(int64(n), int64(lim.MaxMembers)) {
		return fmt.Errorf("%w: %d members, limit %d", ErrTooLarge, n, lim.MaxMembers)
	}
	total := int64(len(manifest))
	if over(total, lim.MaxManifestBytes) || over(total, lim.MaxMemberBytes) {
		return fmt.Errorf("%w: %s is %d bytes, limits %d (manifest) and %d (member)", ErrTooLarge, ManifestMember, total, lim.MaxManifestBytes, lim.MaxMemberBytes)
	}
	for i, raw := range members {
		if n := int64(len(raw)); over(n, lim.MaxMemberBytes) {
			return fmt.Errorf("%w: %q is %d bytes, limit %d", ErrTooLarge, arrays[i].name+npySuffix, n, lim.MaxMemberBytes)
		}
		total += int64(len(raw))
	}
	if over(total, lim.MaxTotalBytes) {
		return fmt.Errorf("%w: members total %d bytes, limit %d", ErrTooLarge, total, lim.MaxTotalBytes)
	}
	var size countingWriter
	if err := write(&size); err != nil {
		return err
	}
	if over(int64(size), lim.MaxFileBytes) {
		return fmt.Errorf("%w: file would be %d bytes, limit %d", ErrTooLarge, size, lim.MaxFileBytes)
	}
	return nil
}

// countingWriter counts and discards what is written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// WriteBank writes b to path atomically (WriteFileAtomic), so path always holds either the old or
// the complete new bank.
func WriteBank(path string, b *Bank) error {
	if err := WriteFileAtomic(path, 0o644, func(w io.Writer) error { return EncodeBank(w, b) }); err != nil {
		return fmt.Errorf("skills: write bank: %w", err)
	}
	return nil
}

// Reader errors. Every error ReadBank returns for a bad file wraps
// ErrBadBank and one of the reasons below (or ErrInvalidContract,
// ErrUnknownLayout, ErrLayoutMismatch), with the member and the detail.
var (
	ErrBadBank = errors.New("skills: bad bank")

	ErrTruncatedZip     = fmt.Errorf("%w: truncated or corrupt zip", ErrBadBank)
	ErrTooLarge         = fmt.Errorf("%w: over size limit", ErrBadBank)
	ErrMissingMember    = fmt.Errorf("%w: missing member", ErrBadBank)
	ErrUnexpectedMember = fmt.Errorf("%w: unexpected member", ErrBadBank)
	ErrBadManifest      = fmt.Errorf("%w: bad manifest", ErrBadBank)
	ErrUnknownVersion   = fmt.Errorf("%w: unknown format version", ErrBadBank)
	ErrChecksumMismatch = fmt.Errorf("%w: checksum mismatch", ErrBadBank)
	ErrBadArray         = fmt.Errorf("%w: bad array", ErrBadBank)
	ErrShapeMismatch    = fmt.Errorf("%w: shape mismatch", ErrBadBank)
	ErrNonFiniteWeights = fmt.Errorf("%w: NaN or Inf in weights", ErrBadBank)
)

// Limits bound what a reader allocates for one bank, whatever the file
// claims (a zero field bounds nothing, as in skills/npz); the writer refuses
// a bank over DefaultLimits, so it never writes one ReadBank would refuse.
type Limits struct {
	MaxFileBytes     int64 // size of the .npz file
	MaxMembers       int   // zip members
	MaxManifestBytes int64 // manifest.json, uncompressed
	MaxMemberBytes   int64 // one member (the manifest too), uncompressed
	MaxTotalBytes    int64 // all members, uncompressed
}

// DefaultLimits fit banks far larger than Dual-Force produces: three
// 299-256-256-24 slots and hundreds of latents are about 2 MiB, and 100,000
// latents of 128 values (a 51 MB latents member) fit.
var DefaultLimits = Limits{
	MaxFileBytes:     256 << 20,
	MaxMembers:       4096,
	MaxManifestBytes: 16 << 20,
	MaxMemberBytes:   64 << 20,
	MaxTotalBytes:    256 << 20,
}

// ReadBank opens, verifies and decodes the bank at path with DefaultLimits.
func ReadBank(path string) (*Bank, error) {
	b, err := npz.DecodeFile(path, func(r io.ReaderAt, size int64) (*Bank, error) { return DecodeBank(r, size, DefaultLimits) })
	if err != nil {
		return nil, fmt.Errorf("skills: read bank: %w", err)
	}
	return b, nil
}

// DecodeBank verifies and decodes a bank of size bytes read from r. It
// checks, in order: zip structure and limits, manifest syntax and version,
// the contract and layout, the array table against the zip members, then
// each member's size, CRC-32, SHA-256, npy header, dtype, shape and finiteness, and
// finally the assembled bank (Bank.Validate).
func DecodeBank(r io.ReaderAt, size int64, lim Limits) (*Bank, error) {
	zr, err := npz.NewReader(r, size, npz.Limits{
		MaxFileBytes: lim.MaxFileBytes, MaxMembers: lim.MaxMembers,
		MaxMemberBytes: lim.MaxMemberBytes, MaxTotalBytes: lim.MaxTotalBytes,
	})
	if err != nil {
		return nil, archiveErr(err)
	}
	b, err := decodeBank(zr, lim)
	if err != nil {
		return nil, archiveErr(err)
	}
	return b, nil
}

// archiveErr adds to an error of the archive layer the bank reader's own
// reason, so every error wraps ErrBadBank.
func archiveErr(err error) error {
	for _, m := range []struct{ archive, bank error }{
		{npz.ErrZip, ErrTruncatedZip}, {npz.ErrTooLarge, ErrTooLarge}, {npz.ErrMissing, ErrMissingMember},
		{npz.ErrDuplicate, ErrUnexpectedMember}, {npz.ErrChecksum, ErrChecksumMismatch}, {npz.ErrNpy, ErrBadArray},
	} {
		if errors.Is(err, m.archive) && !errors.Is(err, ErrBadBank) {
			return fmt.Errorf("%w: %w", m.bank, err)
		}
	}
	return err
}

func decodeBank(zr *npz.Reader, lim Limits) (*Bank, error) {
	js, err := zr.Raw(ManifestMember, lim.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(js)
	if err != nil {
		return nil, err
	}
	c := m.common()
	if err := c.Contract.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBank, err)
	}
	if err := c.Contract.CheckFeedable(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBank, err)
	}
	refs, err := m.refs()
	if err != nil {
		return nil, err
	}
	if err := checkArrayTable(m.table(), refs); err != nil {
		return nil, err
	}
	for _, name := range zr.Names() {
		if name == ManifestMember {
			continue
		}
		if _, ok := refs[strings.TrimSuffix(name, npySuffix)]; !ok || !strings.HasSuffix(name, npySuffix) {
			return nil, fmt.Errorf("%w: %q is not in the manifest's array table", ErrUnexpectedMember, name)
		}
	}
	arrays := make(map[string]decodedArray, len(refs))
	for _, e := range m.table() {
		data, err := readArray(zr, e, refs[e.Name])
		if err != nil {
			return nil, err
		}
		arrays[e.Name] = decodedArray{e.Shape, data}
	}
	b, err := m.assemble(arrays)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return b, nil
}

// readArray reads, verifies and decodes the member of table entry e, whose
// manifest reference is ref.
func readArray(zr *npz.Reader, e arrayEntry, ref arrayRef) (any, error) {
	raw, err := zr.Raw(e.Name+npySuffix, 0)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != e.SHA256 {
		return nil, fmt.Errorf("%w: %q: SHA-256 is %s, manifest says %s", ErrChecksumMismatch, e.Name, got, e.SHA256)
	}
	shape, data, err := decodeArray(raw, e.Dtype)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadArray, e.Name, err)
	}
	if !slices.Equal(shape, e.Shape) {
		return nil, fmt.Errorf("%w: %q is %v in the file, %v in the manifest", ErrShapeMismatch, e.Name, shape, e.Shape)
	}
	finite := func(v float64) bool { return !math.IsInf(v, 0) && (ref.nanMissing || !math.IsNaN(v)) }
	bad := false
	switch x := data.(type) {
	case []float32:
		bad = slices.ContainsFunc(x, func(v float32) bool { return !finite(float64(v)) })
	case []float64:
		bad = slices.ContainsFunc(x, func(v float64) bool { return !finite(v) })
	}
	if bad {
		return nil, fmt.Errorf("%w: %q", ErrNonFiniteWeights, e.Name)
	}
	return data, nil
}

// decodedArray is a decoded array of any element type ([]float32, []float64 or
// []int32) with its shape.
type decodedArray struct {
	Shape []int
	Data  any
}

// arrayRef is what a manifest says one of its arrays must be: its dtype, its
// shape (nil: any, Bank.Validate checks it), and whether NaN marks a missing
// value in it (it is refused otherwise, and Inf always).
type arrayRef struct {
	dtype      string
	shape      []int
	nanMissing bool
}

// bankManifest is a parsed manifest of one format version.
type bankManifest interface {
	common() *manifestCommon
	table() []arrayEntry
	// refs returns every array the manifest references, by name.
	refs() (map[string]arrayRef, error)
	// assemble builds the bank from the manifest and its verified arrays.
	assemble(arrays map[string]decodedArray) (*Bank, error)
}

func (m *manifestCommon) common() *manifestCommon { return m }
func (m *manifest) table() []arrayEntry           { return m.Arrays }
func (m *manifestV1) table() []arrayEntry         { return m.Arrays }

func parseManifest(js []byte) (bankManifest, error) {
	var head struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if head.FormatVersion == nil {
		return nil, fmt.Errorf("%w: no format_version", ErrBadManifest)
	}
	var m bankManifest
	var count int
	switch *head.FormatVersion {
	case 1:
		v1 := &manifestV1{}
		if err := decodeStrict(js, v1); err != nil {
			return nil, err
		}
		if v1.Latents.Array != LatentsArray {
			return nil, fmt.Errorf("%w: latents array %q, want %q", ErrBadManifest, v1.Latents.Array, LatentsArray)
		}
		m, count = v1, len(v1.Latents.Items)
	case FormatVersion:
		v2 := &manifest{}
		if err := decodeStrict(js, v2); err != nil {
			return nil, err
		}
		m, count = v2, v2.Latents.Count
	default:
		return nil, fmt.Errorf("%w: %d (this reader knows 1 and %d)", ErrUnknownVersion, *head.FormatVersion, FormatVersion)
	}
	c := m.common()
	if err := c.checkHead(); err != nil {
		return nil, err
	}
	switch {
	case c.ActionDim != NumJoints:
		return nil, fmt.Errorf("%w: action_dim %d, want %d", ErrBadManifest, c.ActionDim, NumJoints)
	case len(c.Slots) == 0 || len(c.Slots) > maxSlots:
		return nil, fmt.Errorf("%w: %d slots, want 1..%d", ErrBadManifest, len(c.Slots), maxSlots)
	case count < 1 || count > maxLatents:
		return nil, fmt.Errorf("%w: %d latents, want 1..%d", ErrBadManifest, count, maxLatents)
	case c.LatentDim < 1 || c.LatentDim > maxLayerWidth:
		return nil, fmt.Errorf("%w: latent_dim %d outside 1..%d", ErrBadManifest, c.LatentDim, maxLayerWidth)
	}
	return m, nil
}

// checkHead checks the policy head a manifest declares (see the format).
func (c *manifestCommon) checkHead() error {
	switch {
	case c.FormatVersion == 1 && (c.HeadLayout != HeadLayout || c.Components != nil):
		return fmt.Errorf("%w: format v1 knows only head_layout %q, without components", ErrBadManifest, HeadLayout)
	case c.HeadLayout == HeadLayout:
		if c.Components != nil && *c.Components != 1 {
			return fmt.Errorf("%w: components %d with head_layout %q (a single Gaussian): want 1 or no components", ErrBadManifest, *c.Components, HeadLayout)
		}
	case c.HeadLayout == MixtureHeadLayout:
		if c.Components == nil {
			return fmt.Errorf("%w: head_layout %q without components", ErrBadManifest, MixtureHeadLayout)
		}
		if k := *c.Components; k < 2 || k > MaxComponents {
			return fmt.Errorf("%w: components %d with head_layout %q, want 2..%d", ErrBadManifest, k, MixtureHeadLayout, MaxComponents)
		}
	default:
		return fmt.Errorf("%w: head_layout %q, want %q or %q", ErrBadManifest, c.HeadLayout, HeadLayout, MixtureHeadLayout)
	}
	return nil
}

// decodeStrict decodes one JSON object into m, refusing unknown fields and
// trailing data.
func decodeStrict(js []byte, m any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the manifest object", ErrBadManifest)
	}
	return nil
}

// checkArrayTable checks that the table lists well-formed, unique arrays and
// exactly the arrays the manifest references, with the dtypes and shapes the
// references imply.
func checkArrayTable(table []arrayEntry, refs map[string]arrayRef) error {
	listed := make(map[string]bool, len(table))
	for _, e := range table {
		switch {
		case !validArrayName(e.Name):
			return fmt.Errorf("%w: array name %q", ErrBadManifest, e.Name)
		case listed[e.Name]:
			return fmt.Errorf("%w: array %q listed twice", ErrBadManifest, e.Name)
		case len(e.SHA256) != 2*sha256.Size:
			return fmt.Errorf("%w: array %q sha256 %q is not 64 hex digits", ErrBadManifest, e.Name, e.SHA256)
		}
		if err := checkShape(e.Shape); err != nil {
			return fmt.Errorf("%w: array %q: %w", ErrBadManifest, e.Name, err)
		}
		ref, ok := refs[e.Name]
		switch {
		case !ok:
			return fmt.Errorf("%w: array %q is listed but never referenced", ErrBadManifest, e.Name)
		case e.Dtype != ref.dtype:
			return fmt.Errorf("%w: array %q has dtype %q, want %q", ErrBadManifest, e.Name, e.Dtype, ref.dtype)
		case ref.shape != nil && !slices.Equal(e.Shape, ref.shape):
			return fmt.Errorf("%w: array %q is %v in the table, its reference implies %v", ErrShapeMismatch, e.Name, e.Shape, ref.shape)
		}
		listed[e.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		if !listed[name] {
			return fmt.Errorf("%w: array %q is referenced but not in the array table", ErrBadManifest, name)
		}
	}
	return nil
}

// refCollector gathers a manifest's references, refusing a name referenced
// twice.
type refCollector struct {
	refs map[string]arrayRef
	err  error
}

func (r *refCollector) add(name string, ref arrayRef) {
	if _, dup := r.refs[name]; dup && r.err == nil {
		r.err = fmt.Errorf("%w: array %q referenced twice", ErrBadManifest, name)
	}
	r.refs[name] = ref
}

func (r *refCollector) slots(c *manifestCommon) {
	for i, s := range c.Slots {
		if len(s.Layers) == 0 || len(s.Layers) > maxLayers {
			if r.err == nil {
				r.err = fmt.Errorf("%w: slot %d has %d layers, want 1..%d", ErrBadManifest, i, len(s.Layers), maxLayers)
			}
			return
		}
		for _, l := range s.Layers {
			r.add(l.W, arrayRef{dtype: npz.DtypeFloat32, shape: []int{l.Out, l.In}})
			r.add(l.B, arrayRef{dtype: npz.DtypeFloat32, shape: []int{l.Out}})
		}
	}
}

func assembleSlots(c *manifestCommon, arrays map[string]decodedArray) *Bank {
	b := &Bank{Producer: c.Producer, Contract: c.Contract, LatentDim: c.LatentDim}
	if c.HeadLayout == MixtureHeadLayout { // checked: with 2..MaxComponents components
		b.Components = *c.Components
	}
	for _, s := range c.Slots {
		var net MLP
		for _, l := range s.Layers {
			net.Layers = append(net.Layers, Dense{In: l.In, Out: l.Out, W: arrays[l.W].Data.([]float32), B: arrays[l.B].Data.([]float32), Act: l.Act})
		}
		b.Slots = append(b.Slots, Slot{Policy: net})
	}
	return b
}

func (m *manifest) refs() (map[string]arrayRef, error) {
	r := refCollector{refs: make(map[string]arrayRef)}
	r.slots(&m.manifestCommon)
	k, f := m.Latents.Count, m.Contract.Features.Dim(m.Contract.Layout)
	r.add(LatentsArray, arrayRef{dtype: npz.DtypeFloat32, shape: []int{k, m.LatentDim}})
	r.add(latentsSkill, arrayRef{dtype: npz.DtypeInt32, shape: []int{k}})
	r.add(latentsIteration, arrayRef{dtype: npz.DtypeInt32, shape: []int{k}})
	r.add(latentsSigmoidMu, arrayRef{dtype: npz.DtypeFloat64, shape: []int{k}})
	r.add(latentsPhi, arrayRef{dtype: npz.DtypeFloat64, shape: []int{k}})
	r.add(latentsOfflinePsi, arrayRef{dtype: npz.DtypeFloat32, shape: []int{k, f}})
	r.add(latentsOnlineReturn, arrayRef{dtype: npz.DtypeFloat64, shape: []int{k}, nanMissing: true})
	r.add(latentsOnlinePsi, arrayRef{dtype: npz.DtypeFloat32, shape: []int{k, f}, nanMissing: true})
	r.add(latentsPassed, arrayRef{dtype: npz.DtypeInt32, shape: []int{k}})
	worlds := m.Latents.GoalRateWorlds
	if len(worlds) > maxWorlds {
		return nil, fmt.Errorf("%w: goal rates in %d worlds, at most %d", ErrBadManifest, len(worlds), maxWorlds)
	}
	for i, w := range worlds {
		if err := CheckWorldName(w); err != nil {
			return nil, fmt.Errorf("%w: goal_rate_worlds: %w", ErrBadManifest, err)
		}
		if i > 0 && w <= worlds[i-1] {
			return nil, fmt.Errorf("%w: goal_rate_worlds: %q after %q: want sorted names, each once", ErrBadManifest, w, worlds[i-1])
		}
		r.add(latentsGoalRate+w, arrayRef{dtype: npz.DtypeFloat32, shape: []int{k}, nanMissing: true})
	}
	if m.FRE != nil {
		for _, name := range m.FRE.Arrays {
			if !strings.HasPrefix(name, freArrayPrefix) || name == FREAnchors {
				return nil, fmt.Errorf("%w: FRE array %q must be named %s<name> and not %s", ErrBadManifest, name, freArrayPrefix, FREAnchors)
			}
			r.add(name, arrayRef{dtype: npz.DtypeFloat32})
		}
		r.add(FREAnchors, arrayRef{dtype: npz.DtypeFloat32})
	}
	return r.refs, r.err
}

func (m *manifest) assemble(arrays map[string]decodedArray) (*Bank, error) {
	b := assembleSlots(&m.manifestCommon, arrays)
	k, zd, f := m.Latents.Count, m.LatentDim, m.Contract.Features.Dim(m.Contract.Layout)
	z := arrays[LatentsArray].Data.([]float32)
	skill := arrays[latentsSkill].Data.([]int32)
	iter := arrays[latentsIteration].Data.([]int32)
	sigmoidMu := arrays[latentsSigmoidMu].Data.([]float64)
	phi := arrays[latentsPhi].Data.([]float64)
	offlinePsi := arrays[latentsOfflinePsi].Data.([]float32)
	onlineReturn := arrays[latentsOnlineReturn].Data.([]float64)
	onlinePsi := arrays[latentsOnlinePsi].Data.([]float32)
	passed := arrays[latentsPassed].Data.([]int32)
	verdicts := make([]bool, k)
	b.Latents = make([]Latent, k)
	for i := range k {
		in := LatentInfo{
			Skill: int(skill[i]), Iteration: int(iter[i]), SigmoidMu: sigmoidMu[i], Phi: phi[i],
			OfflinePsi: offlinePsi[i*f : (i+1)*f : (i+1)*f],
		}
		if !math.IsNaN(onlineReturn[i]) {
			in.OnlineReturn = &onlineReturn[i]
		}
		switch row := onlinePsi[i*f : (i+1)*f : (i+1)*f]; {
		case !slices.ContainsFunc(row, isNaN32):
			in.OnlinePsi = row
		case slices.ContainsFunc(row, func(v float32) bool { return !isNaN32(v) }):
			return nil, fmt.Errorf("%w: %s row %d mixes NaN (not evaluated) and values", ErrBadManifest, latentsOnlinePsi, i)
		}
		switch passed[i] {
		case -1:
		case 0, 1:
			verdicts[i] = passed[i] == 1
			in.PassedFilter = &verdicts[i]
		default:
			return nil, fmt.Errorf("%w: %s[%d] is %d, want -1, 0 or 1", ErrBadManifest, latentsPassed, i, passed[i])
		}
		b.Latents[i] = Latent{Info: in, Z: z[i*zd : (i+1)*zd : (i+1)*zd]}
	}
	prev := -1
	for _, l := range m.Latents.Labels {
		switch {
		case l.Latent <= prev || l.Latent >= k:
			return nil, fmt.Errorf("%w: label of latent %d: want increasing indices below %d", ErrBadManifest, l.Latent, k)
		case l.Name == "" && len(l.Tags) == 0:
			return nil, fmt.Errorf("%w: label of latent %d has neither name nor tags", ErrBadManifest, l.Latent)
		}
		prev = l.Latent
		b.Latents[l.Latent].Info.Name, b.Latents[l.Latent].Info.Tags = l.Name, l.Tags
	}
	for _, w := range m.Latents.GoalRateWorlds {
		if err := assembleGoalRates(b.Latents, w, arrays[latentsGoalRate+w].Data.([]float32)); err != nil {
			return nil, err
		}
	}
	if m.FRE != nil {
		b.FRE = &FRE{Net: FRENet{Heads: m.FRE.Heads, Arrays: make(map[string]Array, len(m.FRE.Arrays))}, Subsets: m.FRE.Subsets}
		for _, name := range m.FRE.Arrays {
			a := arrays[name]
			b.FRE.Net.Arrays[name] = Array{Shape: a.Shape, Data: a.Data.([]float32)}
		}
		a := arrays[FREAnchors]
		b.FRE.Anchors = Array{Shape: a.Shape, Data: a.Data.([]float32)}
	}
	return b, nil
}

// assembleGoalRates sets the latents' goal rates in world w from its array:
// NaN (not measured) or a rate in [0,1], at least one measured.
func assembleGoalRates(latents []Latent, w string, rates []float32) error {
	name := latentsGoalRate + w
	measured := false
	for i, r := range rates {
		if isNaN32(r) {
			continue
		}
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("%w: %s[%d] is %v, want a rate in [0,1] or NaN (not measured)", ErrBadManifest, name, i, r)
		}
		in := &latents[i].Info
		if in.GoalRate == nil {
			in.GoalRate = make(map[string]float32)
		}
		in.GoalRate[w] = r
		measured = true
	}
	if !measured {
		return fmt.Errorf("%w: %s measures no latent (all NaN): leave the world out of goal_rate_worlds", ErrBadManifest, name)
	}
	return nil
}

func isNaN32(v float32) bool { return v != v }

func (m *manifestV1) refs() (map[string]arrayRef, error) {
	r := refCollector{refs: make(map[string]arrayRef)}
	r.slots(&m.manifestCommon)
	r.add(LatentsArray, arrayRef{dtype: npz.DtypeFloat32, shape: []int{len(m.Latents.Items), m.LatentDim}})
	if m.FRE != nil {
		for _, name := range m.FRE.Arrays {
			if !strings.HasPrefix(name, v1FREPrefix) || len(name) == len(v1FREPrefix) {
				return nil, fmt.Errorf("%w: FRE array %q must be named %s<name>", ErrBadManifest, name, v1FREPrefix)
			}
			r.add(name, arrayRef{dtype: npz.DtypeFloat32})
		}
	}
	return r.refs, r.err
}

// assemble builds a v1 bank; its reserved FRE section carries no encoder
// and is dropped.
func (m *manifestV1) assemble(arrays map[string]decodedArray) (*Bank, error) {
	b := assembleSlots(&m.manifestCommon, arrays)
	z := arrays[LatentsArray].Data.([]float32)
	for i, info := range m.Latents.Items {
		b.Latents = append(b.Latents, Latent{Info: info, Z: z[i*m.LatentDim : (i+1)*m.LatentDim : (i+1)*m.LatentDim]})
	}
	return b, nil
}
