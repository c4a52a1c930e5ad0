package skills

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sampleBank is a small but complete bank: slots x latentsPerSlot latents
// with every optional field used somewhere, and an FRE section.
func sampleBank(t testing.TB, l Layout, slots, latentsPerSlot, latentDim int, hidden ...int) *Bank {
	t.Helper()
	return sampleMixtureBank(t, l, 0, slots, latentsPerSlot, latentDim, hidden...)
}

// sampleMixtureBank is sampleBank with policy heads of the given mixture
// components.
func sampleMixtureBank(t testing.TB, l Layout, components, slots, latentsPerSlot, latentDim int, hidden ...int) *Bank {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(slots), uint64(latentDim)))
	c := testContract(t, l)
	for i := range c.Normaliser.Mean {
		c.Normaliser.Mean[i] = float32(rng.NormFloat64())
		c.Normaliser.Std[i] = 0.1 + rng.Float32()
	}
	b := &Bank{Producer: "skills test", Contract: c, LatentDim: latentDim, Components: components}
	sizes := append(append([]int{l.Dim() + latentDim}, hidden...), HeadOutputs(NumJoints, components))
	for range slots {
		b.Slots = append(b.Slots, Slot{Policy: randomMLP(rng, ActReLU, sizes...)})
	}
	featDim := c.Features.Dim(l)
	for i := range slots {
		for k := range latentsPerSlot {
			info := LatentInfo{
				Skill: i, Iteration: k, SigmoidMu: rng.Float64(), Phi: 4 * rng.NormFloat64(),
				OfflinePsi: randomVec(rng, featDim),
			}
			if k%2 == 1 {
				ret, pass := 100*rng.Float64(), k%4 == 1
				info.OnlineReturn, info.PassedFilter, info.OnlinePsi = &ret, &pass, randomVec(rng, featDim)
				info.Tags = []string{"left", fmt.Sprintf("iter%d", k)}
				info.Name = fmt.Sprintf("skill %d at iteration %d", i, k)
				info.GoalRate = map[string]float32{"obstacle": float32(k) / 30, "obstacle_fence_left": 1}
			}
			b.Latents = append(b.Latents, Latent{Info: info, Z: randomVec(rng, latentDim)})
		}
	}
	b.Latents[0].Info.Name = "scripted-trot fit"
	b.Latents[0].Info.Tags = []string{"high", "left"}
	b.Latents[0].Info.GoalRate = map[string]float32{"obstacle_fenced": 0}
	b.FRE = sampleFRE(rng, l.Dim(), latentDim)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleFRE is a small random encoder for states of d values and latents of
// z, with 8 anchors in 2 subsets.
func sampleFRE(rng *rand.Rand, d, z int) *FRE {
	net := randomFRENet(rng, freSizes{state: d, stateEmbed: 4, bins: 8, rewardEmbed: 4, ffn: 8, blocks: 1, heads: 2, latent: z})
	return &FRE{Net: *net, Anchors: Array{Shape: []int{8, d}, Data: randomVec(rng, 8*d)}, Subsets: 2}
}

func encode(t testing.TB, b *Bank) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := EncodeBank(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(raw []byte) (*Bank, error) {
	return DecodeBank(bytes.NewReader(raw), int64(len(raw)), DefaultLimits)
}

func TestBankRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		l          Layout
		components int
	}{{Locomotion48(), 0}, {Navigation171(), 0}, {Locomotion48(), 3}, {Navigation171(), MaxComponents}} {
		t.Run(fmt.Sprintf("%s/components %d", tt.l.Name, tt.components), func(t *testing.T) {
			b := sampleMixtureBank(t, tt.l, tt.components, 3, 4, 16, 32, 32)
			path := filepath.Join(t.TempDir(), "bank.npz")
			if err := WriteBank(path, b); err != nil {
				t.Fatal(err)
			}
			back, err := ReadBank(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b, back) {
				t.Fatalf("round trip changed the bank:\n%+v\n%+v", b, back)
			}
			if err := back.Validate(); err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(path)
			if !bytes.Equal(raw, encode(t, back)) {
				t.Error("re-encoding a read bank gives different bytes: the format is not deterministic")
			}
			var m map[string]any
			if err := json.Unmarshal(unzipMembers(t, raw)[0].data, &m); err != nil {
				t.Fatal(err)
			}
			layout, components := HeadLayout, any(nil)
			if tt.components > 1 {
				layout, components = MixtureHeadLayout, float64(tt.components)
			}
			if m["head_layout"] != layout || m["components"] != components {
				t.Errorf("manifest head_layout %v, components %v; want %v, %v", m["head_layout"], m["components"], layout, components)
			}
		})
	}
}

// Components 0 and 1 are both a single Gaussian: the same bytes (those of the
// banks written before mixtures existed: no components key), read back as 0.
func TestSingleGaussianComponents(t *testing.T) {
	zero := encode(t, sampleBank(t, Locomotion48(), 2, 2, 4, 8))
	b := sampleBank(t, Locomotion48(), 2, 2, 4, 8)
	b.Components = 1
	if one := encode(t, b); !bytes.Equal(one, zero) {
		t.Fatal("a bank of components 1 is written unlike one of components 0")
	}
	for name, raw := range map[string][]byte{
		"as written":                   zero,
		"components 1 in the manifest": rezipRaw(t, editManifest(func(m map[string]any) { m["components"] = 1 })(t, unzipMembers(t, zero))),
	} {
		back, err := decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.Components != 0 {
			t.Errorf("%s: read back with components %d, want 0", name, back.Components)
		}
	}
}

func TestWriteBankIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bank.npz")
	first := sampleBank(t, Locomotion48(), 1, 1, 4, 8)
	if err := WriteBank(path, first); err != nil {
		t.Fatal(err)
	}
	second := sampleBank(t, Locomotion48(), 2, 2, 4, 8)
	if err := WriteBank(path, second); err != nil {
		t.Fatal(err)
	}
	invalid := sampleBank(t, Locomotion48(), 2, 2, 4, 8)
	invalid.Contract.Kp = 100
	if err := WriteBank(path, invalid); !errors.Is(err, ErrInvalidContract) {
		t.Fatalf("writing an invalid bank: %v", err)
	}
	if err := WriteBank(filepath.Join(dir, "missing", "bank.npz"), first); err == nil {
		t.Error("wrote into a directory that does not exist")
	}
	back, err := ReadBank(path)
	if err != nil || !reflect.DeepEqual(back, second) {
		t.Fatalf("after a refused write the file must hold the last good bank: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("temporary files left behind: %v", names)
	}
}

// member is one zip entry, for building corrupted banks.
type member struct {
	name   string
	data   []byte
	method uint16
}

func unzipMembers(t testing.TB, raw []byte) []member {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var ms []member
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, member{f.Name, data, f.Method})
	}
	return ms
}

func rezip(t *testing.T, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// corruption edits the members of a valid bank.
type corruption func(t *testing.T, ms []member) []member

func editManifest(f func(m map[string]any)) corruption {
	return func(t *testing.T, ms []member) []member {
		for i := range ms {
			if ms[i].name == ManifestMember {
				var m map[string]any
				if err := json.Unmarshal(ms[i].data, &m); err != nil {
					t.Fatal(err)
				}
				f(m)
				js, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				ms[i].data = js
			}
		}
		return ms
	}
}

func obj(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v
}

func arrayEntryOf(m map[string]any, name string) map[string]any {
	for _, e := range m["arrays"].([]any) {
		if e.(map[string]any)["name"] == name {
			return e.(map[string]any)
		}
	}
	panic("no array " + name)
}

// replaceArray swaps an array member's bytes, updating the manifest's
// checksum so the corruption gets past the integrity check.
func replaceArray(name string, data []byte) corruption {
	return func(t *testing.T, ms []member) []member {
		for i := range ms {
			if ms[i].name == name+npySuffix {
				ms[i].data = data
			}
		}
		sum := sha256.Sum256(data)
		return editManifest(func(m map[string]any) { arrayEntryOf(m, name)["sha256"] = hex.EncodeToString(sum[:]) })(t, ms)
	}
}

// withAt returns a copy of x with x[i] = v.
func withAt[T any](x []T, i int, v T) []T {
	x = slices.Clone(x)
	x[i] = v
	return x
}

// retype replaces an array and its table entry (shape, dtype, checksum)
// consistently, so that only the manifest's references can object.
func retype(name string, shape []int, data any) corruption {
	return func(t *testing.T, ms []member) []member {
		ms = replaceArray(name, npyBytes(t, shape, data))(t, ms)
		return editManifest(func(m map[string]any) {
			e := arrayEntryOf(m, name)
			e["shape"], e["dtype"] = shape, dtypeOf(data)
		})(t, ms)
	}
}

func npyBytes(t *testing.T, shape []int, data any) []byte {
	t.Helper()
	raw, err := encodeArray(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestReadBankRefusesCorruptBanks(t *testing.T) {
	b := sampleBank(t, Locomotion48(), 2, 2, 8, 16)
	good := encode(t, b)
	mixture := encode(t, sampleMixtureBank(t, Locomotion48(), 3, 2, 2, 8, 16))
	editMixture := func(f func(m map[string]any)) []byte {
		return rezipRaw(t, editManifest(f)(t, unzipMembers(t, mixture)))
	}
	head := func(layout string, components any) corruption {
		return editManifest(func(m map[string]any) {
			m["head_layout"] = layout
			if components != nil {
				m["components"] = components
			}
		})
	}
	w0 := b.Slots[0].Policy.Layers[0]
	nanW := append([]float32(nil), w0.W...)
	nanW[5] = float32(math.NaN())
	infZ := make([]float32, len(b.Latents)*b.LatentDim)
	infZ[3] = float32(math.Inf(1))
	k, featDim := len(b.Latents), b.Contract.Features.Dim(b.Contract.Layout)
	skills, passed := make([]int32, k), make([]int32, k)
	mus, returns := make([]float64, k), make([]float64, k)
	onlinePsi := make([]float32, k*featDim)
	for i, l := range b.Latents {
		skills[i], mus[i], returns[i], passed[i] = int32(l.Info.Skill), l.Info.SigmoidMu, math.NaN(), -1
		copy(onlinePsi[i*featDim:], l.Info.OnlinePsi)
		if l.Info.OnlinePsi == nil {
			for j := range featDim {
				onlinePsi[i*featDim+j] = float32(math.NaN())
			}
		}
	}
	if b.Latents[0].Info.OnlinePsi != nil || b.Latents[1].Info.OnlinePsi == nil {
		t.Fatal("the sample bank's latent 0 must lack online psi and latent 1 have it")
	}
	// Goal rates in obstacle_fence_left: latents 1 and 3 measured, 0 and 2 not.
	const fenceLeft = latentsGoalRate + "obstacle_fence_left"
	nan32 := float32(math.NaN())
	rates := []float32{nan32, 1, nan32, 1}
	if _, ok := b.Latents[0].Info.GoalRate["obstacle_fence_left"]; ok || b.Latents[1].Info.GoalRate["obstacle_fence_left"] != 1 || k != len(rates) {
		t.Fatal("the sample bank's latent 0 must lack a goal rate in obstacle_fence_left and latent 1 have 1")
	}
	goalRateWorlds := func(worlds ...any) corruption {
		return editManifest(func(m map[string]any) { obj(m, "latents").(map[string]any)["goal_rate_worlds"] = worlds })
	}
	withHeader := func(header string) []byte {
		h := fmt.Sprintf("{'descr': %s, }", header)
		h += strings.Repeat(" ", 15-(10+len(h))%16) + "\n"
		out := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
		out = append(out, h...)
		return binary.LittleEndian.AppendUint32(out, 0)
	}

	tests := []struct {
		name string
		raw  []byte     // used as is when set
		edit corruption // applied to the good bank's members otherwise
		want error
	}{
		{"empty file", []byte{}, nil, ErrTruncatedZip},
		{"not a zip", []byte("hello, robot"), nil, ErrTruncatedZip},
		{"missing manifest", nil, func(t *testing.T, ms []member) []member { return ms[1:] }, ErrMissingMember},
		{"manifest not JSON", nil, func(t *testing.T, ms []member) []member { ms[0].data = []byte("{"); return ms }, ErrBadManifest},
		{"trailing data after manifest", nil, func(t *testing.T, ms []member) []member {
			ms[0].data = append(ms[0].data, []byte(`{"x":1}`)...)
			return ms
		}, ErrBadManifest},
		{"unknown manifest field", nil, editManifest(func(m map[string]any) { m["surprise"] = 1 }), ErrBadManifest},
		{"no format version", nil, editManifest(func(m map[string]any) { delete(m, "format_version") }), ErrBadManifest},
		{"format version 3", nil, editManifest(func(m map[string]any) { m["format_version"] = 3 }), ErrUnknownVersion},
		{"format version 0", nil, editManifest(func(m map[string]any) { m["format_version"] = 0 }), ErrUnknownVersion},
		{"v1 latents in a v2 manifest", nil, editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["items"] = []any{}
		}), ErrBadManifest},
		{"format version as text", nil, editManifest(func(m map[string]any) { m["format_version"] = "1" }), ErrBadManifest},
		{"unknown layout", nil, editManifest(func(m map[string]any) {
			obj(m, "contract", "layout").(map[string]any)["name"] = "biped99"
		}), ErrUnknownLayout},
		{"layout fields swapped", nil, editManifest(func(m map[string]any) {
			f0, f1 := obj(m, "contract", "layout", "fields", 0).(map[string]any), obj(m, "contract", "layout", "fields", 1).(map[string]any)
			f0["name"], f1["name"] = f1["name"], f0["name"]
		}), ErrLayoutMismatch},
		{"gain over the link ceiling", nil, editManifest(func(m map[string]any) { obj(m, "contract").(map[string]any)["kp"] = 6 }), ErrInvalidContract},
		{"default pose of 11 joints", nil, editManifest(func(m map[string]any) {
			c := obj(m, "contract").(map[string]any)
			c["default_pose"] = c["default_pose"].([]any)[:11]
		}), ErrBadManifest},
		{"head layout", nil, editManifest(func(m map[string]any) { m["head_layout"] = "mean" }), ErrBadManifest},
		{"no head layout", nil, editManifest(func(m map[string]any) { delete(m, "head_layout") }), ErrBadManifest},
		{"mixture layout without components", nil, head(MixtureHeadLayout, nil), ErrBadManifest},
		{"mixture layout with components 1", nil, head(MixtureHeadLayout, 1), ErrBadManifest},
		{"mixture layout with components 0", nil, head(MixtureHeadLayout, 0), ErrBadManifest},
		{"mixture layout with components 17", nil, head(MixtureHeadLayout, 17), ErrBadManifest},
		{"mixture layout with negative components", nil, head(MixtureHeadLayout, -3), ErrBadManifest},
		{"components as text", nil, head(MixtureHeadLayout, "3"), ErrBadManifest},
		{"components as a fraction", nil, head(MixtureHeadLayout, 2.5), ErrBadManifest},
		{"plain layout with components 3", nil, head(HeadLayout, 3), ErrBadManifest},
		{"plain layout with components 0", nil, head(HeadLayout, 0), ErrBadManifest},
		{"mixture layout over single-Gaussian heads", nil, head(MixtureHeadLayout, 3), ErrBadManifest},
		{"mixture layout misspelt", nil, head("mixture:mean,log_std", 3), ErrBadManifest},
		{"plain layout over mixture heads", editMixture(func(m map[string]any) {
			m["head_layout"] = HeadLayout
			delete(m, "components")
		}), nil, ErrBadManifest},
		{"mixture components disagree with the heads", editMixture(func(m map[string]any) { m["components"] = 2 }), nil, ErrBadManifest},
		{"unknown activation", nil, editManifest(func(m map[string]any) {
			obj(m, "slots", 0, "layers", 0).(map[string]any)["act"] = "swish"
		}), ErrBadManifest},
		{"latent of a missing slot", nil, replaceArray(latentsSkill, npyBytes(t, []int{k}, withAt(skills, 0, int32(7)))), ErrBadManifest},
		{"sigmoid(mu) above 1", nil, replaceArray(latentsSigmoidMu, npyBytes(t, []int{k}, withAt(mus, 2, 1.5))), ErrBadManifest},
		{"NaN sigmoid(mu)", nil, replaceArray(latentsSigmoidMu, npyBytes(t, []int{k}, withAt(mus, 2, math.NaN()))), ErrNonFiniteWeights},
		{"Inf online return", nil, replaceArray(latentsOnlineReturn, npyBytes(t, []int{k}, withAt(returns, 0, math.Inf(-1)))), ErrNonFiniteWeights},
		{"online psi half evaluated", nil, replaceArray(latentsOnlinePsi, npyBytes(t, []int{k, featDim}, withAt(onlinePsi, 1, 0.5))), ErrBadManifest},
		{"goal rate above 1", nil, replaceArray(fenceLeft, npyBytes(t, []int{k}, withAt(rates, 1, 1.5))), ErrBadManifest},
		{"negative goal rate", nil, replaceArray(fenceLeft, npyBytes(t, []int{k}, withAt(rates, 3, -0.1))), ErrBadManifest},
		{"Inf goal rate", nil, replaceArray(fenceLeft, npyBytes(t, []int{k}, withAt(rates, 0, float32(math.Inf(1))))), ErrNonFiniteWeights},
		{"goal rates measuring no latent", nil, replaceArray(fenceLeft, npyBytes(t, []int{k}, []float32{nan32, nan32, nan32, nan32})), ErrBadManifest},
		{"goal rates of fewer latents", nil, retype(fenceLeft, []int{k - 1}, rates[:k-1]), ErrShapeMismatch},
		{"goal rates as float64", nil, retype(fenceLeft, []int{k}, []float64{0, 1, 0, 1}), ErrBadManifest},
		{"goal rate world not listed", nil, goalRateWorlds("obstacle", "obstacle_fenced"), ErrBadManifest},
		{"goal rate world without its array", nil, goalRateWorlds("obstacle", "obstacle_fence_left", "obstacle_fence_right", "obstacle_fenced"), ErrBadManifest},
		{"goal rate worlds unsorted", nil, goalRateWorlds("obstacle_fence_left", "obstacle", "obstacle_fenced"), ErrBadManifest},
		{"goal rate world twice", nil, goalRateWorlds("obstacle", "obstacle_fence_left", "obstacle_fence_left", "obstacle_fenced"), ErrBadManifest},
		{"goal rate world escaping its name", nil, goalRateWorlds("obstacle", "obstacle_fence_left", "obstacle_fenced/../x"), ErrBadManifest},
		{"goal rate worlds not a list", nil, editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["goal_rate_worlds"] = "obstacle"
		}), ErrBadManifest},
		{"passed filter 2", nil, replaceArray(latentsPassed, npyBytes(t, []int{k}, withAt(passed, 3, int32(2)))), ErrBadManifest},
		{"skills stored as float32", nil, replaceArray(latentsSkill, npyBytes(t, []int{k}, make([]float32, k))), ErrBadArray},
		{"skills listed as float32", nil, retype(latentsSkill, []int{k}, make([]float32, k)), ErrBadManifest},
		{"psi of the wrong size", nil, retype(latentsOfflinePsi, []int{k, 2}, make([]float32, 2*k)), ErrShapeMismatch},
		{"label of a missing latent", nil, editManifest(func(m map[string]any) {
			obj(m, "latents", "labels", 0).(map[string]any)["latent"] = k
		}), ErrBadManifest},
		{"labels out of order", nil, editManifest(func(m map[string]any) {
			ls := obj(m, "latents", "labels").([]any)
			ls[0], ls[1] = ls[1], ls[0]
		}), ErrBadManifest},
		{"empty label", nil, editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["labels"] = []any{map[string]any{"latent": 1}}
		}), ErrBadManifest},
		{"latent count disagrees with the arrays", nil, editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["count"] = k - 1
		}), ErrShapeMismatch},
		{"FRE array truncated", nil, replaceArray(FREMeanB, npyBytes(t, []int{b.LatentDim - 1}, make([]float32, b.LatentDim-1))), ErrShapeMismatch},
		{"FRE array mis-shaped", nil, retype(FREMeanB, []int{b.LatentDim - 1}, make([]float32, b.LatentDim-1)), ErrBadFRE},
		{"FRE for another layout", nil, retype(FREStateW, []int{171, 4}, make([]float32, 171*4)), ErrBadFRE},
		{"FRE anchors of another width", nil, retype(FREAnchors, []int{8, 47}, make([]float32, 8*47)), ErrBadFRE},
		{"FRE anchors not in subsets", nil, editManifest(func(m map[string]any) { obj(m, "fre").(map[string]any)["subsets"] = 3 }), ErrBadFRE},
		{"FRE heads", nil, editManifest(func(m map[string]any) { obj(m, "fre").(map[string]any)["heads"] = 3 }), ErrBadFRE},
		{"FRE NaN weight", nil, replaceArray(FRERewardEmbed, npyBytes(t, []int{8, 4}, withAt(make([]float32, 32), 9, float32(math.NaN())))), ErrNonFiniteWeights},
		{"FRE array left out of the encoder", nil, editManifest(func(m map[string]any) {
			f := obj(m, "fre").(map[string]any)
			f["arrays"] = f["arrays"].([]any)[1:]
		}), ErrBadManifest},
		{"FRE array missing", nil, func(t *testing.T, ms []member) []member {
			ms = editManifest(func(m map[string]any) {
				f := obj(m, "fre").(map[string]any)
				var keep []any
				for _, name := range f["arrays"].([]any) {
					if name != FREFinalBeta {
						keep = append(keep, name)
					}
				}
				f["arrays"] = keep
				var table []any
				for _, e := range m["arrays"].([]any) {
					if e.(map[string]any)["name"] != FREFinalBeta {
						table = append(table, e)
					}
				}
				m["arrays"] = table
			})(t, ms)
			return slices.DeleteFunc(ms, func(m member) bool { return m.name == FREFinalBeta+npySuffix })
		}, ErrBadFRE},
		{"missing array member", nil, func(t *testing.T, ms []member) []member {
			var out []member
			for _, m := range ms {
				if m.name != "slot0.layer0.W.npy" {
					out = append(out, m)
				}
			}
			return out
		}, ErrMissingMember},
		{"unexpected member", nil, func(t *testing.T, ms []member) []member {
			return append(ms, member{"payload.sh", []byte("#!/bin/sh"), zip.Store})
		}, ErrUnexpectedMember},
		{"member without .npy suffix", nil, func(t *testing.T, ms []member) []member {
			return append(ms, member{"slot0.layer0.W", ms[1].data, zip.Store})
		}, ErrUnexpectedMember},
		{"duplicate member", nil, func(t *testing.T, ms []member) []member { return append(ms, ms[0]) }, ErrUnexpectedMember},
		{"checksum in the manifest", nil, editManifest(func(m map[string]any) {
			arrayEntryOf(m, "latents")["sha256"] = strings.Repeat("ab", 32)
		}), ErrChecksumMismatch},
		{"data flipped, zip CRC recomputed", nil, func(t *testing.T, ms []member) []member {
			for i := range ms {
				if ms[i].name == "slot1.layer1.b.npy" {
					ms[i].data[len(ms[i].data)-2] ^= 0x40
				}
			}
			return ms
		}, ErrChecksumMismatch},
		{"short checksum", nil, editManifest(func(m map[string]any) { arrayEntryOf(m, "latents")["sha256"] = "ab" }), ErrBadManifest},
		{"table shape disagrees with the layer", nil, editManifest(func(m map[string]any) {
			arrayEntryOf(m, "slot0.layer0.W")["shape"] = []any{16, 55}
		}), ErrShapeMismatch},
		{"file shape disagrees with the table", nil, replaceArray("slot0.layer0.b", npyBytes(t, []int{4, 4}, make([]float32, 16))), ErrShapeMismatch},
		{"matrix stored flat", nil, replaceArray("slot0.layer0.W", npyBytes(t, []int{len(w0.W)}, w0.W)), ErrShapeMismatch},
		{"NaN weight", nil, replaceArray("slot0.layer0.W", npyBytes(t, []int{w0.Out, w0.In}, nanW)), ErrNonFiniteWeights},
		{"Inf latent", nil, replaceArray("latents", npyBytes(t, []int{len(b.Latents), b.LatentDim}, infZ)), ErrNonFiniteWeights},
		{"big-endian array", nil, replaceArray("slot0.layer0.b", withHeader("'>f4', 'fortran_order': False, 'shape': (1,)")), ErrBadArray},
		{"float64 array", nil, replaceArray("slot0.layer0.b", withHeader("'<f8', 'fortran_order': False, 'shape': (1,)")), ErrBadArray},
		{"Fortran-order array", nil, replaceArray("slot0.layer0.b", withHeader("'<f4', 'fortran_order': True, 'shape': (1,)")), ErrBadArray},
		{"array data truncated", nil, func(t *testing.T, ms []member) []member {
			raw := npyBytes(t, []int{16}, make([]float32, 16))
			return replaceArray("slot0.layer0.b", raw[:len(raw)-4])(t, ms)
		}, ErrBadArray},
		{"array without npy header", nil, replaceArray("slot0.layer0.b", []byte("not numpy at all")), ErrBadArray},
		{"listed but unreferenced array", nil, func(t *testing.T, ms []member) []member {
			raw := npyBytes(t, []int{2}, []float32{1, 2})
			sum := sha256.Sum256(raw)
			ms = append(ms, member{"spare.npy", raw, zip.Store})
			return editManifest(func(m map[string]any) {
				m["arrays"] = append(m["arrays"].([]any), map[string]any{"name": "spare", "dtype": "<f4", "shape": []any{2}, "sha256": hex.EncodeToString(sum[:])})
			})(t, ms)
		}, ErrBadManifest},
		{"referenced array missing from the table", nil, editManifest(func(m map[string]any) {
			var keep []any
			for _, e := range m["arrays"].([]any) {
				if e.(map[string]any)["name"] != "latents" {
					keep = append(keep, e)
				}
			}
			m["arrays"] = keep
		}), ErrBadManifest},
		{"array name escaping the archive", nil, editManifest(func(m map[string]any) {
			arrayEntryOf(m, "latents")["name"] = "../latents"
		}), ErrBadManifest},
		{"FRE array outside its namespace", nil, editManifest(func(m map[string]any) {
			obj(m, "fre").(map[string]any)["arrays"] = []any{"latents"}
		}), ErrBadManifest},
		{"unsupported compression", nil, func(t *testing.T, ms []member) []member { ms[2].method = 99; return ms }, ErrTruncatedZip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if tt.edit != nil {
				raw = rezipRaw(t, tt.edit(t, unzipMembers(t, good)))
			}
			_, err := decode(raw)
			if !errors.Is(err, ErrBadBank) || !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBank = %v\nwant an error wrapping ErrBadBank and %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}

// rezipRaw stores members byte for byte under whatever method they claim
// (the members of an encoded bank are stored, so this rebuilds it exactly),
// so a member can also carry a compression method no reader knows.
func rezipRaw(t testing.TB, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		fh := &zip.FileHeader{Name: m.name, Method: m.method, CRC32: crc32.ChecksumIEEE(m.data),
			UncompressedSize64: uint64(len(m.data)), CompressedSize64: uint64(len(m.data))}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Any prefix of a bank is refused: the zip directory lives at the end.
func TestReadBankRefusesTruncation(t *testing.T) {
	good := encode(t, sampleBank(t, Navigation171(), 2, 2, 8, 16))
	step := max(1, len(good)/400)
	offsets := []int{0, 1, 4, 22, len(good) - 1, len(good) - 22}
	for n := 0; n < len(good); n += step {
		offsets = append(offsets, n)
	}
	for n := len(good) - 100; n < len(good); n++ {
		offsets = append(offsets, n)
	}
	for _, n := range offsets {
		if _, err := decode(good[:n]); !errors.Is(err, ErrBadBank) {
			t.Fatalf("bank truncated to %d of %d bytes: %v", n, len(good), err)
		}
	}
	t.Logf("%d truncations of a %d-byte bank refused", len(offsets), len(good))
}

// A flipped byte is either refused or provably harmless (it hit a field the
// format does not use, such as a member's modification time).
func TestReadBankDetectsFlippedBytes(t *testing.T) {
	b := sampleBank(t, Locomotion48(), 2, 2, 8, 16)
	good := encode(t, b)
	step := max(1, len(good)/1500)
	refused, harmless := 0, 0
	for off := 0; off < len(good); off += step {
		bad := append([]byte(nil), good...)
		bad[off] ^= 0xA5
		back, err := decode(bad)
		switch {
		case err == nil && reflect.DeepEqual(back, b):
			harmless++
		case err == nil:
			t.Fatalf("flipping byte %d changed the bank silently", off)
		case !errors.Is(err, ErrBadBank):
			t.Fatalf("flipping byte %d: error %v does not wrap ErrBadBank", off, err)
		default:
			refused++
		}
	}
	t.Logf("%d flips refused, %d harmless (unused zip header fields)", refused, harmless)
}

func TestReadBankLimits(t *testing.T) {
	good := encode(t, sampleBank(t, Locomotion48(), 2, 2, 8, 16))
	tests := map[string]func(*Limits){
		"file":     func(l *Limits) { l.MaxFileBytes = int64(len(good)) - 1 },
		"members":  func(l *Limits) { l.MaxMembers = 3 },
		"manifest": func(l *Limits) { l.MaxManifestBytes = 100 },
		"member":   func(l *Limits) { l.MaxMemberBytes = 1000 },
		"total":    func(l *Limits) { l.MaxTotalBytes = int64(len(good)) / 2 },
	}
	for name, f := range tests {
		lim := DefaultLimits
		f(&lim)
		if _, err := DecodeBank(bytes.NewReader(good), int64(len(good)), lim); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s limit: %v", name, err)
		}
	}
}

// A member whose header claims a small size but inflates to more is cut off
// by archive/zip's size check, never buffered whole.
func TestReadBankRefusesLyingSizes(t *testing.T) {
	good := encode(t, sampleBank(t, Locomotion48(), 1, 1, 4, 8))
	ms := unzipMembers(t, good)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, m := range ms {
		var fh zip.FileHeader
		fh.Name, fh.Method = m.name, zip.Store
		fh.CRC32 = crc32.ChecksumIEEE(m.data)
		fh.UncompressedSize64, fh.CompressedSize64 = uint64(len(m.data)), uint64(len(m.data))
		if i == 2 {
			fh.UncompressedSize64 -= 8 // the header lies: the member is longer
		}
		w, err := zw.CreateRaw(&fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	zw.Close()
	if _, err := decode(buf.Bytes()); !errors.Is(err, ErrBadBank) {
		t.Fatalf("lying member size: %v", err)
	}
}

func TestReadBankAcceptsDeflate(t *testing.T) {
	b := sampleBank(t, Navigation171(), 2, 3, 8, 16)
	ms := unzipMembers(t, encode(t, b))
	for i := range ms {
		ms[i].method = zip.Deflate // what numpy.savez_compressed writes
	}
	back, err := decode(rezip(t, ms))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, b) {
		t.Fatal("deflated bank reads differently")
	}
}

func TestEncodeBankRefusesInvalidBanks(t *testing.T) {
	tests := map[string]func(*Bank){
		"no slots":             func(b *Bank) { b.Slots = nil },
		"no latents":           func(b *Bank) { b.Latents = nil },
		"latent dim":           func(b *Bank) { b.LatentDim = 0 },
		"z size":               func(b *Bank) { b.Latents[0].Z = b.Latents[0].Z[1:] },
		"NaN z":                func(b *Bank) { b.Latents[1].Z[0] = float32(math.NaN()) },
		"slot out of range":    func(b *Bank) { b.Latents[0].Info.Skill = 5 },
		"negative iteration":   func(b *Bank) { b.Latents[0].Info.Iteration = -1 },
		"duplicate names":      func(b *Bank) { b.Latents[1].Info.Name = b.Latents[0].Info.Name },
		"empty tag":            func(b *Bank) { b.Latents[0].Info.Tags = []string{""} },
		"NaN phi":              func(b *Bank) { b.Latents[0].Info.Phi = math.NaN() },
		"Inf return":           func(b *Bank) { r := math.Inf(1); b.Latents[0].Info.OnlineReturn = &r },
		"policy head":          func(b *Bank) { b.Slots[0].Policy.Layers[1].Act = ActTanh },
		"mixture of 24 rows":   func(b *Bank) { b.Components = 3 },
		"components 17":        func(b *Bank) { b.Components = 17 },
		"negative components":  func(b *Bank) { b.Components = -1 },
		"iteration over int32": func(b *Bank) { b.Latents[0].Info.Iteration = math.MaxInt32 + 1 },
		"FRE truncated":        func(b *Bank) { a := b.FRE.Net.Arrays[FREMeanW]; a.Data = a.Data[1:]; b.FRE.Net.Arrays[FREMeanW] = a },
		"FRE unknown array":    func(b *Bank) { b.FRE.Net.Arrays["fre/x"] = Array{Shape: []int{1}, Data: []float32{1}} },
		"FRE of another layout": func(b *Bank) {
			b.FRE = sampleFRE(rand.New(rand.NewPCG(1, 1)), Navigation171().Dim(), b.LatentDim)
		},
		"FRE latent size":     func(b *Bank) { b.FRE = sampleFRE(rand.New(rand.NewPCG(1, 1)), Locomotion48().Dim(), b.LatentDim+1) },
		"FRE heads":           func(b *Bank) { b.FRE.Net.Heads = 3 },
		"anchors NaN":         func(b *Bank) { b.FRE.Anchors.Data[5] = float32(math.NaN()) },
		"anchors width":       func(b *Bank) { b.FRE.Anchors = Array{Shape: []int{4, 47}, Data: make([]float32, 4*47)} },
		"anchors truncated":   func(b *Bank) { b.FRE.Anchors.Data = b.FRE.Anchors.Data[:10] },
		"anchor subsets":      func(b *Bank) { b.FRE.Subsets = 3 },
		"no anchor subsets":   func(b *Bank) { b.FRE.Subsets = 0 },
		"layout not feedable": func(b *Bank) { b.Contract.Layout.Fields[0].Unit = "mph" },
		"contract":            func(b *Bank) { b.Contract.PolicyHz = 7 },
		"NaN goal rate":       func(b *Bank) { b.Latents[1].Info.GoalRate["obstacle"] = float32(math.NaN()) },
		"goal rate above 1":   func(b *Bank) { b.Latents[1].Info.GoalRate["obstacle"] = 1.01 },
		"goal rate world":     func(b *Bank) { b.Latents[1].Info.GoalRate["fence left"] = 0.5 },
		"unnamed world":       func(b *Bank) { b.Latents[1].Info.GoalRate[""] = 0.5 },
		"too many worlds": func(b *Bank) {
			for w := range maxWorlds {
				b.Latents[1].Info.GoalRate[fmt.Sprint("w", w)] = 0.5
			}
		},
	}
	for name, f := range tests {
		b := sampleBank(t, Locomotion48(), 2, 2, 4, 8)
		f(b)
		if err := EncodeBank(io.Discard, b); err == nil {
			t.Errorf("%s: written", name)
		}
	}
}

func TestRecall(t *testing.T) {
	b := sampleBank(t, Locomotion48(), 3, 4, 8, 16)
	s, err := b.ByName("scripted-trot fit")
	if err != nil || s.Index != 0 || s.Slot != 0 || &s.Z[0] != &b.Latents[0].Z[0] || s.Net != &b.Slots[0].Policy {
		t.Fatalf("ByName = %+v, %v", s, err)
	}
	if _, err := b.ByName("moonwalk"); !errors.Is(err, ErrNoSkill) {
		t.Errorf("unknown name: %v", err)
	}
	s, err = b.ByIndex(5)
	if err != nil || s.Slot != 1 || s.Info.Iteration != 1 {
		t.Errorf("ByIndex(5) = %+v, %v", s, err)
	}
	for _, i := range []int{-1, len(b.Latents)} {
		if _, err := b.ByIndex(i); !errors.Is(err, ErrNoSkill) {
			t.Errorf("ByIndex(%d): %v", i, err)
		}
	}
	var left []int
	for _, s := range b.ByTags("left") {
		left = append(left, s.Index)
	}
	if want := []int{0, 1, 3, 5, 7, 9, 11}; !reflect.DeepEqual(left, want) {
		t.Errorf("ByTags(left) = %v, want %v", left, want)
	}
	if got := b.ByTags("left", "high"); len(got) != 1 || got[0].Index != 0 {
		t.Errorf("ByTags(left, high) = %+v", got)
	}
	if got := b.ByTags("underwater"); len(got) != 0 {
		t.Errorf("ByTags(underwater) = %+v", got)
	}
	if got := b.ByTags(); len(got) != len(b.Latents) {
		t.Errorf("ByTags() returns %d of %d", len(got), len(b.Latents))
	}

	q := append([]float32(nil), b.Latents[6].Z...)
	q[0] += 0.01
	s, d, err := b.Nearest(q)
	if err != nil || s.Index != 6 || math.Abs(d-0.01) > 1e-6 {
		t.Errorf("Nearest = latent %d at %v, %v; want 6 at 0.01", s.Index, d, err)
	}
	if _, _, err := b.Nearest(q[1:]); !errors.Is(err, ErrDimMismatch) {
		t.Errorf("short query: %v", err)
	}
	q[0] = float32(math.NaN())
	if _, _, err := b.Nearest(q); !errors.Is(err, ErrNoSkill) {
		t.Errorf("NaN query: %v", err)
	}
}

// Recalling a skill and running it is SetLatent on a per-slot policy, with
// the bank's policy head.
func TestRecallRunsThePolicy(t *testing.T) {
	for _, components := range []int{0, 3} {
		b := sampleMixtureBank(t, Navigation171(), components, 2, 2, 8, 16)
		ps, err := b.NewPolicies()
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		obs := randomVec(rng, b.Contract.Layout.Dim())
		act := make([]float32, NumJoints)
		for i := range b.Latents {
			s, _ := b.ByIndex(i)
			p := ps[s.Slot]
			if err := p.SetLatent(s.Z); err != nil {
				t.Fatal(err)
			}
			if err := p.Act(obs, act); err != nil {
				t.Fatal(err)
			}
			want, _, _ := referenceAct(*s.Net, components, NumJoints, slices.Concat(obs, s.Z))
			for j := range act {
				if !closeTo(act[j], want[j], 1e-4) {
					t.Fatalf("components %d, latent %d joint %d: %v, want %v", components, i, j, act[j], want[j])
				}
			}
		}
	}
}
