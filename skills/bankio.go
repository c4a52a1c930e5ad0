package skills

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/dualforce/dualforce/skills/npz"
)

// Bank file format v1
//
// A bank is one .npz file: a zip archive (members stored or deflated) that
// numpy.load opens directly. It holds
//
//   - manifest.json: the manifest below (UTF-8 JSON);
//   - one member "<array>.npy" per array named in the manifest: float32
//     little-endian, C order, rank 1 or 2, written with npyio. numpy.load
//     shows it under the key "<array>".
//
// Arrays: "slot<i>.layer<j>.W" (Out, In) and "slot<i>.layer<j>.b" (Out,) for
// the policy network of skill slot i; "latents" (number of latents,
// latent_dim), row r being the z of latents.items[r]; "fre.<name>" for the
// optional FRE encoder. The manifest lists every array with its shape and the
// SHA-256 of the whole member (the .npy bytes), checked on read. Members
// that the manifest does not list are refused.
//
// Manifest (JSON object): format_version (1), producer, head_layout
// ("mean,log_std", see Policy), action_dim (12), latent_dim, contract (the
// Contract), slots[i].layers[j] = {in, out, act, w, b} (array names),
// latents = {array, items: [LatentInfo...]}, fre (optional {config, arrays}),
// arrays = [{name, dtype "<f4", shape, sha256}] sorted by name.
const (
	ManifestMember = "manifest.json"
	LatentsArray   = "latents"
	npyDtype       = npz.DtypeFloat32
	npySuffix      = npz.NpySuffix
	freArrayPrefix = "fre."
)

type manifest struct {
	FormatVersion int             `json:"format_version"`
	Producer      string          `json:"producer,omitempty"`
	HeadLayout    string          `json:"head_layout"`
	ActionDim     int             `json:"action_dim"`
	LatentDim     int             `json:"latent_dim"`
	Contract      Contract        `json:"contract"`
	Slots         []manifestSlot  `json:"slots"`
	Latents       manifestLatents `json:"latents"`
	FRE           *manifestFRE    `json:"fre,omitempty"`
	Arrays        []arrayEntry    `json:"arrays"`
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
	Array string       `json:"array"`
	Items []LatentInfo `json:"items"`
}

type manifestFRE struct {
	Config json.RawMessage `json:"config,omitempty"`
	Arrays []string        `json:"arrays"`
}

type arrayEntry struct {
	Name   string `json:"name"`
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	SHA256 string `json:"sha256"`
}

// namedArray is an array on its way to or from the archive.
type namedArray struct {
	name  string
	shape []int
	data  []float32
}

func slotArrayName(slot, layer int, which string) string {
	return fmt.Sprintf("slot%d.layer%d.%s", slot, layer, which)
}

// layout returns the manifest without its array table, and the arrays it
// references, in a fixed order.
func (b *Bank) layout() (manifest, []namedArray) {
	m := manifest{
		FormatVersion: FormatVersion,
		Producer:      b.Producer,
		HeadLayout:    HeadLayout,
		ActionDim:     NumJoints,
		LatentDim:     b.LatentDim,
		Contract:      b.Contract,
		Latents:       manifestLatents{Array: LatentsArray},
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
	z := make([]float32, 0, len(b.Latents)*b.LatentDim)
	for _, l := range b.Latents {
		m.Latents.Items = append(m.Latents.Items, l.Info)
		z = append(z, l.Z...)
	}
	arrays = append(arrays, namedArray{LatentsArray, []int{len(b.Latents), b.LatentDim}, z})
	if b.FRE != nil {
		m.FRE = &manifestFRE{Config: b.FRE.Config, Arrays: []string{}}
		for _, k := range sortedKeys(b.FRE.Arrays) {
			a := b.FRE.Arrays[k]
			m.FRE.Arrays = append(m.FRE.Arrays, freArrayPrefix+k)
			arrays = append(arrays, namedArray{freArrayPrefix + k, a.Shape, a.Data})
		}
	}
	return m, arrays
}

// EncodeBank validates b and writes it to w in format v1.
func EncodeBank(w io.Writer, b *Bank) error {
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
		m.Arrays = append(m.Arrays, arrayEntry{Name: a.name, Dtype: npyDtype, Shape: a.shape, SHA256: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(m.Arrays, func(a, b arrayEntry) int { return strings.Compare(a.Name, b.Name) })
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // keep "<f4" readable
	enc.SetIndent("", " ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("skills: encode manifest: %w", err)
	}
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
// claims.
type Limits struct {
	MaxFileBytes     int64 // size of the .npz file
	MaxMembers       int   // zip members
	MaxManifestBytes int64 // manifest.json, uncompressed
	MaxMemberBytes   int64 // one array member, uncompressed
	MaxTotalBytes    int64 // all members, uncompressed
}

// DefaultLimits fit banks far larger than Dual-Force produces (three
// 299-256-256-24 slots and hundreds of latents are about 2 MiB).
var DefaultLimits = Limits{
	MaxFileBytes:     256 << 20,
	MaxMembers:       4096,
	MaxManifestBytes: 16 << 20,
	MaxMemberBytes:   64 << 20,
	MaxTotalBytes:    256 << 20,
}

// ReadBank opens, verifies and decodes the bank at path with DefaultLimits.
func ReadBank(path string) (*Bank, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("skills: read bank: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("skills: read bank: %w", err)
	}
	b, err := DecodeBank(f, st.Size(), DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// DecodeBank verifies and decodes a bank of size bytes read from r. It
// checks, in order: zip structure and limits, manifest syntax and version,
// the contract and layout, the array table against the zip members, then
// each member's size, CRC-32, SHA-256, npy header, shape and finiteness, and
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
	if err := m.Contract.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBank, err)
	}
	if err := m.Contract.CheckFeedable(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBank, err)
	}
	shapes, err := m.checkArrayTable()
	if err != nil {
		return nil, err
	}
	for _, name := range zr.Names() {
		if name == ManifestMember {
			continue
		}
		if _, ok := shapes[strings.TrimSuffix(name, npySuffix)]; !ok || !strings.HasSuffix(name, npySuffix) {
			return nil, fmt.Errorf("%w: %q is not in the manifest's array table", ErrUnexpectedMember, name)
		}
	}
	arrays := make(map[string][]float32, len(m.Arrays))
	for _, e := range m.Arrays {
		data, err := readArray(zr, e)
		if err != nil {
			return nil, err
		}
		arrays[e.Name] = data
	}
	b, err := m.assemble(arrays, shapes)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return b, nil
}

func readArray(zr *npz.Reader, e arrayEntry) ([]float32, error) {
	raw, err := zr.Raw(e.Name+npySuffix, 0)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != e.SHA256 {
		return nil, fmt.Errorf("%w: %q: SHA-256 is %s, manifest says %s", ErrChecksumMismatch, e.Name, got, e.SHA256)
	}
	shape, data, err := decodeArray(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadArray, e.Name, err)
	}
	if !slices.Equal(shape, e.Shape) {
		return nil, fmt.Errorf("%w: %q is %v in the file, %v in the manifest", ErrShapeMismatch, e.Name, shape, e.Shape)
	}
	if !allFinite(data) {
		return nil, fmt.Errorf("%w: %q", ErrNonFiniteWeights, e.Name)
	}
	return data, nil
}

func parseManifest(js []byte) (*manifest, error) {
	var head struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if head.FormatVersion == nil {
		return nil, fmt.Errorf("%w: no format_version", ErrBadManifest)
	}
	if *head.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w: %d (this reader knows %d)", ErrUnknownVersion, *head.FormatVersion, FormatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var m manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the manifest object", ErrBadManifest)
	}
	switch {
	case m.HeadLayout != HeadLayout:
		return nil, fmt.Errorf("%w: head_layout %q, want %q", ErrBadManifest, m.HeadLayout, HeadLayout)
	case m.ActionDim != NumJoints:
		return nil, fmt.Errorf("%w: action_dim %d, want %d", ErrBadManifest, m.ActionDim, NumJoints)
	case len(m.Slots) == 0 || len(m.Slots) > maxSlots:
		return nil, fmt.Errorf("%w: %d slots, want 1..%d", ErrBadManifest, len(m.Slots), maxSlots)
	case len(m.Latents.Items) == 0 || len(m.Latents.Items) > maxLatents:
		return nil, fmt.Errorf("%w: %d latents, want 1..%d", ErrBadManifest, len(m.Latents.Items), maxLatents)
	case m.LatentDim < 1 || m.LatentDim > maxLayerWidth:
		return nil, fmt.Errorf("%w: latent_dim %d outside 1..%d", ErrBadManifest, m.LatentDim, maxLayerWidth)
	case m.Latents.Array != LatentsArray:
		return nil, fmt.Errorf("%w: latents array %q, want %q", ErrBadManifest, m.Latents.Array, LatentsArray)
	}
	return &m, nil
}

// checkArrayTable checks that the table lists well-formed, unique arrays and
// that exactly the arrays the manifest references are listed, with the
// shapes the references imply. It returns the table's shapes by name.
func (m *manifest) checkArrayTable() (map[string][]int, error) {
	shapes := make(map[string][]int, len(m.Arrays))
	for _, e := range m.Arrays {
		switch {
		case !arrayNameRE.MatchString(e.Name):
			return nil, fmt.Errorf("%w: array name %q", ErrBadManifest, e.Name)
		case shapes[e.Name] != nil:
			return nil, fmt.Errorf("%w: array %q listed twice", ErrBadManifest, e.Name)
		case e.Dtype != npyDtype:
			return nil, fmt.Errorf("%w: array %q has dtype %q, want %q", ErrBadManifest, e.Name, e.Dtype, npyDtype)
		case len(e.SHA256) != 2*sha256.Size:
			return nil, fmt.Errorf("%w: array %q sha256 %q is not 64 hex digits", ErrBadManifest, e.Name, e.SHA256)
		}
		if err := checkShape(e.Shape); err != nil {
			return nil, fmt.Errorf("%w: array %q: %w", ErrBadManifest, e.Name, err)
		}
		shapes[e.Name] = e.Shape
	}
	want := make(map[string][]int)
	ref := func(name string, shape ...int) error {
		if _, dup := want[name]; dup {
			return fmt.Errorf("%w: array %q referenced twice", ErrBadManifest, name)
		}
		want[name] = shape
		return nil
	}
	for i, s := range m.Slots {
		if len(s.Layers) == 0 || len(s.Layers) > maxLayers {
			return nil, fmt.Errorf("%w: slot %d has %d layers, want 1..%d", ErrBadManifest, i, len(s.Layers), maxLayers)
		}
		for _, l := range s.Layers {
			if err := errors.Join(ref(l.W, l.Out, l.In), ref(l.B, l.Out)); err != nil {
				return nil, err
			}
		}
	}
	if err := ref(LatentsArray, len(m.Latents.Items), m.LatentDim); err != nil {
		return nil, err
	}
	if m.FRE != nil {
		for _, name := range m.FRE.Arrays {
			if !strings.HasPrefix(name, freArrayPrefix) || len(name) == len(freArrayPrefix) {
				return nil, fmt.Errorf("%w: FRE array %q must be named %s<name>", ErrBadManifest, name, freArrayPrefix)
			}
			if err := ref(name, nil...); err != nil {
				return nil, err
			}
		}
	}
	for name, ws := range want {
		got, ok := shapes[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: array %q is referenced but not in the array table", ErrBadManifest, name)
		case ws != nil && !slices.Equal(got, ws):
			return nil, fmt.Errorf("%w: array %q is %v in the table, its reference implies %v", ErrShapeMismatch, name, got, ws)
		}
	}
	for name := range shapes {
		if _, ok := want[name]; !ok {
			return nil, fmt.Errorf("%w: array %q is listed but never referenced", ErrBadManifest, name)
		}
	}
	return shapes, nil
}

// assemble builds the bank from a checked manifest and its arrays.
func (m *manifest) assemble(arrays map[string][]float32, shapes map[string][]int) (*Bank, error) {
	b := &Bank{Producer: m.Producer, Contract: m.Contract, LatentDim: m.LatentDim}
	for _, s := range m.Slots {
		var net MLP
		for _, l := range s.Layers {
			net.Layers = append(net.Layers, Dense{In: l.In, Out: l.Out, W: arrays[l.W], B: arrays[l.B], Act: l.Act})
		}
		b.Slots = append(b.Slots, Slot{Policy: net})
	}
	z := arrays[LatentsArray]
	for i, info := range m.Latents.Items {
		b.Latents = append(b.Latents, Latent{Info: info, Z: z[i*m.LatentDim : (i+1)*m.LatentDim : (i+1)*m.LatentDim]})
	}
	if m.FRE != nil {
		b.FRE = &FRE{Arrays: make(map[string]Array, len(m.FRE.Arrays))}
		if len(m.FRE.Config) > 0 {
			var cfg bytes.Buffer
			if err := json.Compact(&cfg, m.FRE.Config); err != nil {
				return nil, fmt.Errorf("%w: fre config: %w", ErrBadManifest, err)
			}
			b.FRE.Config = cfg.Bytes()
		}
		for _, name := range m.FRE.Arrays {
			b.FRE.Arrays[strings.TrimPrefix(name, freArrayPrefix)] = Array{Shape: shapes[name], Data: arrays[name]}
		}
	}
	return b, nil
}
