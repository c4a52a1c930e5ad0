package skills

import (
	"archive/zip"
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzReadBank feeds arbitrary bytes to the bank reader: it must never panic,
// and whatever it accepts must be a valid bank that survives a round trip.
func FuzzReadBank(f *testing.F) {
	good := encode(f, sampleBank(f, Locomotion48(), 1, 2, 4, 8))
	f.Add(good)
	v1, err := os.ReadFile("testdata/bank_v1.npz")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1)
	f.Add(encode(f, sampleMixtureBank(f, Locomotion48(), 3, 1, 2, 4, 8)))
	f.Add(good[:len(good)/2])
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/3] ^= 0xFF
	f.Add(flipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := decode(data); err == nil {
			checkAccepted(t, b)
		}
	})
}

// FuzzBankManifest rewrites the manifest of a valid bank and re-zips it with
// a correct CRC, so the fuzzer explores the manifest-driven checks (array
// table, references, shapes, contract, metadata) that zip CRC-32 hides from
// FuzzReadBank.
func FuzzBankManifest(f *testing.F) {
	ms := unzipMembers(f, encode(f, sampleBank(f, Locomotion48(), 2, 2, 3, 4)))
	js := ms[0].data
	f.Add(js)
	f.Add(js[:len(js)/2])
	f.Add([]byte("{}"))
	f.Add(bytes.Replace(js, []byte(`"format_version": 2`), []byte(`"format_version": 1`), 1))
	f.Add(bytes.Replace(js, []byte(`"in": 51`), []byte(`"in": 50`), 1))
	f.Add(bytes.Replace(js, []byte(`"count": 4`), []byte(`"count": 3`), 1))
	f.Add(bytes.Replace(js, []byte(`"latent": 1`), []byte(`"latent": 9`), 1))
	f.Add(bytes.Replace(js, []byte(`"heads": 2`), []byte(`"heads": 4`), 1))
	f.Add(bytes.Replace(js, []byte(`"subsets": 2`), []byte(`"subsets": 8`), 1))
	f.Add(bytes.Replace(js, []byte(`"obstacle_fenced"`), []byte(`"obstacle_fence_right"`), 1))
	f.Add(bytes.Replace(js, []byte(`"obstacle_fenced"`), []byte(`"obstacle"`), 1))
	// The mixture head's checks: a mixture layout over these single-Gaussian heads, without
	// components, and a components key with the single Gaussian's layout.
	mixture := []byte(`"head_layout": "` + MixtureHeadLayout + `"`)
	f.Add(bytes.Replace(js, []byte(`"head_layout": "`+HeadLayout+`"`), append(mixture, []byte(`, "components": 3`)...), 1))
	f.Add(bytes.Replace(js, []byte(`"head_layout": "`+HeadLayout+`"`), mixture, 1))
	f.Add(bytes.Replace(js, []byte(`"head_layout": "`+HeadLayout+`"`), []byte(`"head_layout": "`+HeadLayout+`", "components": 1`), 1))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		edited := append([]member(nil), ms...)
		edited[0] = member{ManifestMember, manifest, zip.Store}
		raw := rezipRaw(t, edited)
		if b, err := decode(raw); err == nil {
			checkAccepted(t, b)
		}
	})
}

// checkAccepted fails t unless a bank the reader accepted is valid and
// survives a write and a read unchanged.
func checkAccepted(t *testing.T, b *Bank) {
	t.Helper()
	if err := b.Validate(); err != nil {
		t.Fatalf("accepted an invalid bank: %v", err)
	}
	back, err := decode(encode(t, b))
	if err != nil || !reflect.DeepEqual(back, b) {
		t.Fatalf("accepted bank does not round-trip: %v", err)
	}
}
