package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// measuredBank is a navigation bank of two slots and seven latents with every measured field
// in some mix: returns (one tie), passed and failed filters, tags, and goal rates in two
// worlds, one of them measured for some latents only.
func measuredBank(t *testing.T) *skills.Bank {
	t.Helper()
	var a [skills.NumJoints]float32
	b := skillstest.ConstantSlots(t, skillstest.Navigation(t), a, a)
	f := func(x float64) *float64 { return &x }
	yes, no := true, false
	for _, in := range []skills.LatentInfo{
		{Skill: 0, Iteration: 3, SigmoidMu: 0.4, Phi: 0.8, OnlineReturn: f(7), PassedFilter: &no, Tags: []string{"over"},
			GoalRate: map[string]float32{"obstacle": 0.2, "obstacle_fenced": 0.1}},
		{Skill: 1, Iteration: 3, SigmoidMu: 0.6, Phi: 0.5, OnlineReturn: f(12.5), PassedFilter: &yes, Tags: []string{"left", "low"},
			GoalRate: map[string]float32{"obstacle": 0.95, "obstacle_fenced": 0.9}},
		{Skill: 0, Iteration: 4, SigmoidMu: 0.5, Phi: 0.7, OnlineReturn: f(12.5), PassedFilter: &yes, Tags: []string{"right"},
			GoalRate: map[string]float32{"obstacle": 1}},
		{Skill: 1, Iteration: 4, Name: "unjudged", SigmoidMu: 0.7, Phi: 0.2, OnlineReturn: f(3)},
		{Skill: 1, Iteration: 5, SigmoidMu: 0.8, Phi: 0.1},
	} {
		in.OfflinePsi = b.Latents[0].Info.OfflinePsi
		b.Latents = append(b.Latents, skills.Latent{Info: in, Z: []float32{0, 1}})
	}
	b.Latents[0].Info.OnlineReturn = f(-1)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// bank inspect prints the summary and the ranked latents; compared with
// testdata/bank_inspect.golden (go test -update rewrites it).
func TestBankInspect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nav.npz")
	if err := skills.WriteBank(path, measuredBank(t)); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, top := range []string{"4", "0"} {
		out := mustRun(t, "bank", "inspect", "--top", top, path)
		got.WriteString("$ dualforce bank inspect --top " + top + " nav.npz\n" + strings.ReplaceAll(out, path, "nav.npz"))
	}
	golden := filepath.Join("testdata", "bank_inspect.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("bank inspect differs from %s (go test -update rewrites it if the change is intended):\n%s", golden, got.String())
	}
	// An unevaluated bank says so and lists latents in bank order.
	plain := filepath.Join(dir, "plain.npz")
	if err := skills.WriteBank(plain, skillstest.Constant(t, skillstest.Locomotion(t), [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "bank", "inspect", plain); !strings.Contains(out, "no latent has an online return") || !strings.Contains(out, "top 1 of 1 latents") {
		t.Errorf("inspect of an unevaluated bank:\n%s", out)
	}
	// A bank of mixture policies says so.
	mixture := filepath.Join(dir, "mixture.npz")
	if err := skills.WriteBank(mixture, skillstest.MixtureSlots(t, skillstest.Locomotion(t), 3, [skills.NumJoints]float32{})); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "bank", "inspect", mixture); !strings.Contains(out, "policy head: 3-component Gaussian mixture,") {
		t.Errorf("inspect of a mixture bank:\n%s", out)
	}
	// Thousands of latents: the default lists 20 of them under the summary.
	big := measuredBank(t)
	for k := range 3000 {
		l := big.Latents[3]
		r := float64(k % 97)
		l.Info.Iteration, l.Info.OnlineReturn = 10+k, &r
		big.Latents = append(big.Latents, l)
	}
	bigPath := filepath.Join(dir, "big.npz")
	if err := skills.WriteBank(bigPath, big); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "bank", "inspect", bigPath)
	if lines := strings.Count(out, "\n"); lines > 35 || !strings.Contains(out, "top 20 of 3007 latents") || !strings.Contains(out, "3005 of 3007 latents have an online return") {
		t.Errorf("inspect of 3007 latents printed %d lines:\n%s", lines, out)
	}
	damaged := filepath.Join(dir, "damaged.npz")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damaged, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bank"}, 2, "missing method"},
		{[]string{"bank", "inspect"}, 2, "want 1 argument(s)"},
		{[]string{"bank", "inspect", "--top", "-1", path}, 2, "--top -1"},
		{[]string{"bank", "inspect", filepath.Join(dir, "missing.npz")}, 1, "missing.npz"},
		{[]string{"bank", "inspect", damaged}, 1, "damaged.npz"},
		{[]string{"bank", "inspect", "-h"}, 0, "Usage: dualforce bank inspect"},
	} {
		code, stdout, stderr := dualforce(tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit %d mentioning %q", tc.args, code, stdout+stderr, tc.code, tc.want)
		}
	}
}

// The ranking puts measured latents that were not filtered out first (highest return, ties in
// bank order: the latent Bank.Best picks), then the filtered out, then the unmeasured.
func TestRankedLatents(t *testing.T) {
	b := measuredBank(t)
	got := b.Ranked()
	if want := []int{3, 4, 5, 0, 2, 1, 6}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	best, err := b.Best()
	if err != nil || best.Index != got[0] {
		t.Fatalf("Best is %+v (%v), the ranking's first %d", best, err, got[0])
	}
}

// bank merge writes one bank of both banks' skills, evaluable as any; incompatible banks, a
// single bank or a missing --out are refused and nothing is written.
func TestBankMerge(t *testing.T) {
	dir := t.TempDir()
	var a, b [skills.NumJoints]float32
	b[0] = 0.5
	nav := skillstest.Navigation(t)
	paths := map[string]*skills.Bank{
		"one.npz":  skillstest.ConstantSlots(t, nav, a),
		"two.npz":  skillstest.ConstantSlots(t, nav, a, b),
		"loco.npz": skillstest.ConstantSlots(t, skillstest.Locomotion(t), a),
	}
	for name, bank := range paths {
		if err := skills.WriteBank(filepath.Join(dir, name), bank); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	out := in("sub/merged.npz")
	stdout := mustRun(t, "bank", "merge", "--out", out, in("one.npz"), in("two.npz"))
	merged, err := skills.ReadBank(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Slots) != 3 || len(merged.Latents) != 3 || merged.Producer != mergeProducer {
		t.Fatalf("merged bank: %d slots, %d latents, producer %q", len(merged.Slots), len(merged.Latents), merged.Producer)
	}
	for _, want := range []string{"bank: " + out, "3 slots, 3 latents", "one/constant0", "two/constant0", "constant1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bank merge printed %q, missing %q", stdout, want)
		}
	}

	// FILE:SLOTS takes only those slots of a bank, in that order.
	out = in("picked.npz")
	mustRun(t, "bank", "merge", "--out", out, in("one.npz"), in("two.npz")+":1")
	picked, err := skills.ReadBank(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(picked.Slots) != 2 || len(picked.Latents) != 2 || picked.Latents[1].Info.Name != "constant1" || picked.Latents[1].Info.Skill != 1 {
		t.Fatalf("one.npz + two.npz:1: %d slots, %d latents, the second %+v", len(picked.Slots), len(picked.Latents), picked.Latents[1].Info)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"incompatible", []string{"--out", in("bad.npz"), in("one.npz"), in("loco.npz")}, "different contracts"},
		{"slot out of range", []string{"--out", in("bad.npz"), in("one.npz"), in("two.npz") + ":2"}, "slot 2: the bank has slots 0-1"},
		{"slot twice", []string{"--out", in("bad.npz"), in("one.npz"), in("two.npz") + ":0,0"}, "slot 0 named twice"},
		{"empty slot list", []string{"--out", in("bad.npz"), in("one.npz"), in("two.npz") + ":1,"}, "want comma-separated slot indices"},
		{"one bank", []string{"--out", in("bad.npz"), in("one.npz")}, "two or more banks"},
		{"no out", []string{in("one.npz"), in("two.npz")}, "--out is required"},
		{"missing bank", []string{"--out", in("bad.npz"), in("one.npz"), in("none.npz")}, "none.npz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := dualforce(append([]string{"bank", "merge"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(in("bad.npz")); err == nil {
				t.Error("a refused merge wrote its output")
			}
		})
	}
}
