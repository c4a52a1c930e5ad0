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
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/dualforce/dualforce/skills/npz"
)

// A bank written by the format v1 code (before v2 existed) still loads, to
// the same bank that code read back, less its reserved FRE section.
func TestReadsFormatV1Fixture(t *testing.T) {
	b, err := ReadBank("testdata/bank_v1.npz")
	if err != nil {
		t.Fatal(err)
	}
	if b.FRE != nil {
		t.Error("the v1 fixture's reserved FRE section was kept")
	}
	got, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/bank_v1.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatal("the v1 fixture reads differently from what the v1 code read (testdata/bank_v1.golden.json)")
	}
	// Written again, it is a v2 bank with the same content.
	back, err := decode(encode(t, b))
	if err != nil || !reflect.DeepEqual(back, b) {
		t.Fatalf("v1 bank rewritten as v2 does not round-trip: %v", err)
	}
}

// manyLatents is a bank of n latents of latentDim values, unlabelled but
// for every 1000th, and evaluated every other one.
func manyLatents(t testing.TB, n, latentDim int) *Bank {
	t.Helper()
	b := sampleBank(t, Locomotion48(), 3, 1, latentDim, 8)
	rng := rand.New(rand.NewPCG(5, 5))
	featDim := b.Contract.Features.Dim(b.Contract.Layout)
	z, psi := randomVec(rng, n*latentDim), randomVec(rng, 2*n*featDim)
	returns, verdicts := make([]float64, n), make([]bool, n)
	b.Latents = make([]Latent, n)
	for i := range b.Latents {
		in := LatentInfo{Skill: i % 3, Iteration: i / 3, SigmoidMu: rng.Float64(), Phi: rng.NormFloat64(),
			OfflinePsi: psi[2*i*featDim : (2*i+1)*featDim]}
		if i%2 == 1 {
			returns[i], verdicts[i] = 100*rng.Float64(), i%4 == 1
			in.OnlineReturn, in.PassedFilter, in.OnlinePsi = &returns[i], &verdicts[i], psi[(2*i+1)*featDim:(2*i+2)*featDim]
		}
		if i%1000 == 0 {
			in.Name, in.Tags = fmt.Sprintf("latent %d", i), []string{"milestone"}
		}
		b.Latents[i] = Latent{Info: in, Z: z[i*latentDim : (i+1)*latentDim]}
	}
	return b
}

// 100,000 latents of the default FRE latent size (128) fit in a bank: the
// per-latent numbers are arrays, so the manifest stays small.
func TestBankHolds100kLatents(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 60 MB bank")
	}
	b := manyLatents(t, 100_000, 128)
	raw := encode(t, b)
	back, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Latents, b.Latents) {
		t.Fatal("latents changed in the round trip")
	}
	manifest := unzipMembers(t, raw)[0]
	t.Logf("100,000 latents of 128 values: %d-byte bank, %d-byte manifest", len(raw), len(manifest.data))
	if len(manifest.data) > 1<<20 {
		t.Errorf("manifest of %d bytes: per-latent numbers leak into it", len(manifest.data))
	}
}

// The writer refuses exactly what the reader would refuse under the same
// limits: for every limit, just below and at what a bank needs.
func TestWriterEnforcesReaderLimits(t *testing.T) {
	b := sampleBank(t, Navigation171(), 2, 3, 8, 16)
	raw := encode(t, b)
	ms := unzipMembers(t, raw)
	var total, largest int64 // the manifest counts as a member too
	for _, m := range ms {
		total += int64(len(m.data))
		largest = max(largest, int64(len(m.data)))
	}
	needs := map[string]struct {
		set  func(*Limits, int64)
		need int64
	}{
		"file":     {func(l *Limits, v int64) { l.MaxFileBytes = v }, int64(len(raw))},
		"members":  {func(l *Limits, v int64) { l.MaxMembers = int(v) }, int64(len(ms))},
		"manifest": {func(l *Limits, v int64) { l.MaxManifestBytes = v }, int64(len(ms[0].data))},
		"member":   {func(l *Limits, v int64) { l.MaxMemberBytes = v }, largest},
		"total":    {func(l *Limits, v int64) { l.MaxTotalBytes = v }, total},
	}
	for name, n := range needs {
		for _, v := range []int64{n.need - 1, n.need} {
			lim := DefaultLimits
			n.set(&lim, v)
			var buf bytes.Buffer
			werr := encodeBank(&buf, b, lim)
			_, rerr := DecodeBank(bytes.NewReader(raw), int64(len(raw)), lim)
			if (werr == nil) != (rerr == nil) {
				t.Errorf("%s limit %d (bank needs %d): writer %v, reader %v", name, v, n.need, werr, rerr)
			}
			if werr != nil && (!errors.Is(werr, ErrTooLarge) || buf.Len() != 0) {
				t.Errorf("%s limit %d: writer wrote %d bytes, error %v", name, v, buf.Len(), werr)
			}
			if werr == nil && !bytes.Equal(buf.Bytes(), raw) {
				t.Errorf("%s limit %d: the bytes depend on the limits", name, v)
			}
		}
	}
	// A manifest over the default 16 MiB: long names and tags on many latents.
	big := manyLatents(t, 30_000, 2)
	tags := []string{string(bytes.Repeat([]byte("t"), maxTagLen))}
	for i := range big.Latents {
		big.Latents[i].Info.Name = fmt.Sprintf("%0256d", i)
		big.Latents[i].Info.Tags = tags
	}
	err := EncodeBank(io.Discard, big)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a %d-latent bank with long labels: %v", len(big.Latents), err)
	}
	t.Log(err)
}

// The encoder a bank carries encodes a reward over its anchors exactly as
// the encoder it was built from, after a round trip through the file.
func TestBankFREEncodesNewRewards(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	b := sampleBank(t, Locomotion48(), 1, 2, 16, 8)
	d := b.Contract.Layout.Dim()
	b.FRE = &FRE{Net: *randomFRENet(rng, defaultFRESizes(d)), Subsets: 4}
	b.FRE.Net.Arrays[FREMeanW] = Array{Shape: []int{128, 16}, Data: randomVec(rng, 128*16)}
	b.FRE.Net.Arrays[FREMeanB] = Array{Shape: []int{16}, Data: randomVec(rng, 16)}
	b.FRE.Anchors = Array{Shape: []int{128, d}, Data: randomVec(rng, 128*d)}
	back, err := decode(encode(t, b))
	if err != nil {
		t.Fatal(err)
	}
	enc, plan, err := back.FRE.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	if plan.Subsets() != 4 || plan.T != 32 || enc.MaxSet() != 32 {
		t.Fatalf("plan of %d subsets of %d, encoder for %d", plan.Subsets(), plan.T, enc.MaxSet())
	}
	// A new reward: forward velocity of the (standardised) anchors.
	rewards := make([]float32, 128)
	for i := range rewards {
		rewards[i] = back.FRE.Anchors.Data[i*d]
	}
	z := make([]float32, 16)
	if err := enc.EncodeReward(back.FRE.Anchors.Data, rewards, plan, z); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 16)
	for j := range 4 {
		rows := plan.Rows[j*32 : (j+1)*32]
		for i, v := range referenceFRE(&b.FRE.Net, rowsOf(b.FRE.Anchors.Data, d, rows), rewards[j*32:(j+1)*32]) {
			want[i] += v / 4
		}
	}
	if e := maxRelErr(z, want); e > 1e-5 {
		t.Errorf("bank encoder is %.3g away from the float64 reference", e)
	}
	if _, _, err := b.Nearest(z); err != nil {
		t.Errorf("the encoded reward cannot be recalled: %v", err)
	}
}

// FuzzBankFRE replaces one array of a bank's FRE section (or its anchors)
// with fuzzed .npy bytes, and sets the section's heads and subsets, keeping
// checksums and the array table consistent with the new member so that the
// fuzzer reaches the encoder's validation. Whatever is accepted must
// validate, round-trip, and encode the anchors without error.
func FuzzBankFRE(f *testing.F) {
	b := sampleBank(f, Locomotion48(), 1, 1, 4, 4)
	ms := unzipMembers(f, encode(f, b))
	names := append(slices.Sorted(maps.Keys(b.FRE.Net.Arrays)), FREAnchors)
	for i, name := range names {
		a := b.FRE.Net.Arrays[name]
		if name == FREAnchors {
			a = b.FRE.Anchors
		}
		good, err := encodeArray(a.Shape, a.Data)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), int8(2), int8(2), good)
		f.Add(uint8(i), int8(2), int8(2), good[:len(good)-4])
		if len(a.Shape) == 2 && a.Shape[0] > 1 {
			short, _ := encodeArray([]int{a.Shape[0] - 1, a.Shape[1]}, a.Data[:len(a.Data)-a.Shape[1]])
			f.Add(uint8(i), int8(2), int8(1), short)
		}
	}
	f.Add(uint8(0), int8(4), int8(8), []byte{})
	f.Add(uint8(0), int8(-1), int8(0), []byte("\x93NUMPY\x01\x00"))
	f.Fuzz(func(t *testing.T, which uint8, heads, subsets int8, npy []byte) {
		name := names[int(which)%len(names)]
		edited := append([]member(nil), ms...)
		for i := range edited {
			if edited[i].name == name+npySuffix {
				edited[i] = member{edited[i].name, npy, zip.Store}
			}
		}
		sum := sha256.Sum256(npy)
		edited = editManifest(func(m map[string]any) {
			e := arrayEntryOf(m, name)
			e["sha256"] = hex.EncodeToString(sum[:])
			if shape, _, err := decodeArray(npy, npz.DtypeFloat32); err == nil {
				e["shape"] = shape
			}
			fre := obj(m, "fre").(map[string]any)
			fre["heads"], fre["subsets"] = heads, subsets
		})(t, edited)
		got, err := decode(rezipRaw(t, edited))
		if err != nil {
			if !errors.Is(err, ErrBadBank) {
				t.Fatalf("error %v does not wrap ErrBadBank", err)
			}
			return
		}
		checkAccepted(t, got)
		enc, plan, err := got.FRE.NewEncoder()
		if err != nil {
			t.Fatalf("accepted bank has no usable encoder: %v", err)
		}
		rewards := make([]float32, got.FRE.Anchors.Shape[0])
		for i := range rewards {
			rewards[i] = float32(binary.LittleEndian.Uint16(sum[2*(i%16):])) / 65536
		}
		z := make([]float32, got.LatentDim)
		// Finite weights can still overflow: that is an error, never a NaN latent.
		if err := enc.EncodeReward(got.FRE.Anchors.Data, rewards, plan, z); err != nil && !errors.Is(err, ErrNonFiniteLatent) {
			t.Fatalf("encoding over the anchors: %v", err)
		}
	})
}

// The v1 reader keeps refusing what it refused.
func TestReadBankRefusesCorruptV1Banks(t *testing.T) {
	good, err := os.ReadFile("testdata/bank_v1.npz")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit corruption
		want error
	}{
		{"latent of a missing slot", editManifest(func(m map[string]any) {
			obj(m, "latents", "items", 0).(map[string]any)["skill"] = 7
		}), ErrBadManifest},
		{"sigmoid(mu) above 1", editManifest(func(m map[string]any) {
			obj(m, "latents", "items", 0).(map[string]any)["sigmoid_mu"] = 1.5
		}), ErrBadManifest},
		{"v2 latents in a v1 manifest", editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["count"] = 4
		}), ErrBadManifest},
		{"latents array renamed", editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["array"] = "z"
		}), ErrBadManifest},
		{"FRE array outside its namespace", editManifest(func(m map[string]any) {
			obj(m, "fre").(map[string]any)["arrays"] = []any{"fre/token.W", "fre.token.b"}
		}), ErrBadManifest},
		{"no latents", editManifest(func(m map[string]any) {
			obj(m, "latents").(map[string]any)["items"] = []any{}
		}), ErrBadManifest},
		{"mixture head, which v1 never had", editManifest(func(m map[string]any) {
			m["head_layout"], m["components"] = MixtureHeadLayout, 3
		}), ErrBadManifest},
		{"components, which v1 never had", editManifest(func(m map[string]any) { m["components"] = 1 }), ErrBadManifest},
		{"goal rates, which v1 never had", editManifest(func(m map[string]any) {
			obj(m, "latents", "items", 0).(map[string]any)["goal_rate"] = map[string]any{"obstacle": 0.5}
		}), ErrBadManifest},
		{"FRE array flipped", func(t *testing.T, ms []member) []member {
			for i := range ms {
				if ms[i].name == "fre.token.b.npy" {
					ms[i].data[len(ms[i].data)-1] ^= 1
				}
			}
			return ms
		}, ErrChecksumMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(rezipRaw(t, tt.edit(t, unzipMembers(t, good))))
			if !errors.Is(err, ErrBadBank) || !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBank = %v\nwant an error wrapping ErrBadBank and %v", err, tt.want)
			}
		})
	}
}

// The robot path: a reward linear in the raw observation, evaluated on the
// de-standardised anchors and encoded, without allocation.
func TestAnchorEncoder(t *testing.T) {
	b := sampleBank(t, Locomotion48(), 1, 2, 4, 8)
	d := b.Contract.Layout.Dim()
	a, err := b.NewAnchorEncoder()
	if err != nil {
		t.Fatal(err)
	}
	norm, err := NewNormaliser(b.Contract.Normaliser)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Anchors() {
		x := append([]float32(nil), a.RawAnchor(i)...)
		if err := norm.Apply(x); err != nil {
			t.Fatal(err)
		}
		for j, v := range x {
			if !closeTo(v, float64(b.FRE.Anchors.Data[i*d+j]), 1e-4) {
				t.Fatalf("anchor %d element %d: raw %v standardises to %v, stored %v", i, j, a.RawAnchor(i)[j], v, b.FRE.Anchors.Data[i*d+j])
			}
		}
	}
	weights := make([]float32, d)
	weights[0], weights[5] = 1, -0.5 // forward velocity, minus a yaw rate
	rewards := make([]float32, a.Anchors())
	for i := range rewards {
		raw := a.RawAnchor(i)
		rewards[i] = float32(float64(raw[0]) - 0.5*float64(raw[5]))
	}
	zLinear, zDirect := make([]float32, b.LatentDim), make([]float32, b.LatentDim)
	if err := a.EncodeLinearReward(weights, zLinear); err != nil {
		t.Fatal(err)
	}
	if err := a.EncodeRewards(rewards, zDirect); err != nil {
		t.Fatal(err)
	}
	for i := range zLinear {
		if !closeTo(zLinear[i], float64(zDirect[i]), 1e-5) {
			t.Fatalf("linear reward latent %v, direct %v", zLinear, zDirect)
		}
	}
	if n := testing.AllocsPerRun(20, func() { _ = a.EncodeLinearReward(weights, zLinear) }); n != 0 {
		t.Errorf("EncodeLinearReward allocates %v times", n)
	}
	if err := a.EncodeLinearReward(weights[1:], zLinear); !errors.Is(err, ErrDimMismatch) {
		t.Errorf("short weights: %v", err)
	}
	weights[3] = float32(math.NaN())
	if err := a.EncodeLinearReward(weights, zLinear); !errors.Is(err, ErrNonFiniteReward) {
		t.Errorf("NaN weight: %v", err)
	}
	b.FRE = nil
	if _, err := b.NewAnchorEncoder(); !errors.Is(err, ErrNoFRE) {
		t.Errorf("bank without FRE: %v", err)
	}
}
