package eval

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
)

// The runs after a switch start the runtime's start latent and let the core switch to one
// candidate at a time: standing skills in MuJoCo make no progress, the core gives up on the
// start latent after the stall time and takes the candidate, and the measurement counts that
// switch under the world matching what blocked. Candidates the core could not switch to there
// are not run.
func TestAfterSwitchCountsTheSwitchesToEachCandidate(t *testing.T) {
	nav, cfg := stillNavigation(t, 1, 4)
	var still [skills.NumJoints]float32
	bank := skillstest.ConstantSlots(t, nav.Contract, still, still, still, still, still, still)
	ret, failed := 10.0, false
	tags := [][]string{{"right"}, {"left"}, {"over"}, {"left"}, nil, {"right"}}
	for i := range bank.Latents {
		bank.Latents[i].Info.Tags = tags[i]
	}
	// Latent 0 is the start (the only one measured); 3 failed the filter, 4 has no route, 5
	// takes the start's: a candidate where the start stalls with no other route clear.
	bank.Latents[0].Info.OnlineReturn, bank.Latents[0].Info.GoalRate = &ret, map[string]float32{core.WorldObstacle: 1}
	bank.Latents[3].Info.PassedFilter = &failed
	cfg.StartYaw = 0
	res, err := AfterSwitch(t.Context(), cfg, bank, []string{core.WorldObstacle, core.WorldFenceRight, core.WorldFenced})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after switch: %+v", res)
	if res.Start != 0 || !slices.Equal(res.Candidates, []int{1, 2, 5}) || res.RolloutsPerPair != 1 {
		t.Fatalf("start %d, candidates %v, %d rollouts per pair: want 0, [1 2 5] (not the start, the failed or the untagged), 1", res.Start, res.Candidates, res.RolloutsPerPair)
	}
	// The start's stall blocks the right (its route) wherever it stands, so every switch is
	// ranked in the right-fenced world. Unfenced: all three candidates run, 5 as the retry on
	// the stalled route; fence right: the left and over ones (a fence is a wall: no retry on
	// the right); fenced: only the way over is open.
	want := []AfterSwitchRate{
		{Latent: 1, World: core.WorldFenceRight, Switches: 2},
		{Latent: 2, World: core.WorldFenceRight, Switches: 3},
		{Latent: 5, World: core.WorldFenceRight, Switches: 1},
	}
	if !slices.Equal(res.Rates, want) {
		t.Fatalf("rates %+v, want %+v", res.Rates, want)
	}
	if len(res.Runs) != 3 || res.Runs[2].World != core.WorldFenced {
		t.Fatalf("world runs %+v", res.Runs)
	}
	// No latent evaluated and none of slot 0: no start latent.
	bank.Latents[0].Info.OnlineReturn = nil
	for i := range bank.Latents {
		bank.Latents[i].Info.Skill = 1
	}
	if _, err := AfterSwitch(t.Context(), cfg, bank, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("a bank with no start latent: %v", err)
	}
}

// Runs after a switch keep the caller's core settings but never keep the start latent at a
// wall, whatever the caller asked: the switch is what they measure.
func TestMeasuringSwitchesTurnsKeepingOff(t *testing.T) {
	caller := func(c *core.Config) { c.Switching.KeepMeasured, c.Switching.StallAfter = true, 7*time.Second }
	unchanged, adjusted := core.DefaultSwitchConfig(), core.DefaultSwitchConfig()
	adjusted.StallAfter = 7 * time.Second
	for _, tc := range []struct {
		adjust func(*core.Config)
		want   core.SwitchConfig
	}{{nil, unchanged}, {caller, adjusted}} {
		c := core.Config{Switching: core.DefaultSwitchConfig()}
		measuringSwitches(tc.adjust)(&c)
		tc.want.KeepMeasured = false
		if c.Switching != tc.want {
			t.Errorf("switch settings %+v, want %+v", c.Switching, tc.want)
		}
	}
}

// A run counts under the latent its first switch went to and the world matching what blocked
// then; it reached the goal after the switch only if it got there at or after the switch time,
// and runs that never switched count nowhere.
func TestAfterSwitchCountsTally(t *testing.T) {
	const hz = 50
	sw := func(at float64, to int, world string) []Switch { return []Switch{{Time: at, To: to, World: world}} }
	counts := afterSwitchCounts{}
	counts.add([]Rollout{
		{GoalStep: 400, Switches: sw(3, 1, core.WorldFenceRight)},                      // goal at 8.02 s, after the switch
		{GoalStep: 99, Switches: sw(3, 1, core.WorldFenceRight)},                       // goal at 2 s, before it
		{GoalStep: -1, Fell: true, Switches: sw(2, 1, core.WorldFenceRight)},           // fell
		{GoalStep: 149, Switches: sw(3, 1, core.WorldObstacle)},                        // goal at exactly 3 s: after
		{GoalStep: 300, Switches: append(sw(3, 2, core.WorldFenced), sw(5, 1, "")...)}, // the first switch counts
		{GoalStep: 300}, // never switched
	}, hz)
	want := []AfterSwitchRate{
		{Latent: 1, World: core.WorldObstacle, Switches: 1, Goal: 1},
		{Latent: 1, World: core.WorldFenceRight, Switches: 3, Goal: 1, Fell: 1},
		{Latent: 2, World: core.WorldFenced, Switches: 1, Goal: 1},
	}
	if got := counts.rates(); !slices.Equal(got, want) {
		t.Fatalf("rates %+v, want %+v", got, want)
	}
}

// Rates after a switch go into a copy of the bank where enough runs switched, under the
// world's AfterSwitchWorld name, replacing every earlier one.
func TestWithAfterSwitchRates(t *testing.T) {
	nav, _ := stillNavigation(t, 1, 1)
	var still [skills.NumJoints]float32
	bank := skillstest.ConstantSlots(t, nav.Contract, still, still, still)
	old := skills.AfterSwitchWorld(core.WorldFenced)
	bank.Latents[2].Info.GoalRate = map[string]float32{core.WorldObstacle: 0.5, old: 1}
	res := &AfterSwitchResult{Rates: []AfterSwitchRate{
		{Latent: 1, World: core.WorldFenceLeft, Switches: MinAfterSwitch, Goal: 2},
		{Latent: 1, World: core.WorldFenced, Switches: MinAfterSwitch - 1, Goal: 1},
		{Latent: 2, World: core.WorldFenceRight, Switches: 10, Goal: 10},
	}}
	out, err := WithAfterSwitchRates(bank, res)
	if err != nil {
		t.Fatal(err)
	}
	got1, got2 := out.Latents[1].Info.GoalRate, out.Latents[2].Info.GoalRate
	if len(got1) != 1 || got1[skills.AfterSwitchWorld(core.WorldFenceLeft)] != float32(2)/MinAfterSwitch {
		t.Errorf("latent 1: %v; want only the left-fenced rate after a switch (the fenced one had too few switches)", got1)
	}
	if len(got2) != 2 || got2[core.WorldObstacle] != 0.5 || got2[skills.AfterSwitchWorld(core.WorldFenceRight)] != 1 {
		t.Errorf("latent 2: %v; want its rate from the start kept, the old rate after a switch replaced", got2)
	}
	if bank.Latents[2].Info.GoalRate[old] != 1 || bank.Latents[1].Info.GoalRate != nil {
		t.Error("the bank given was changed")
	}
	res.Rates[0].Latent = 3
	if _, err := WithAfterSwitchRates(bank, res); !errors.Is(err, ErrConfig) {
		t.Errorf("a latent beyond the bank: %v", err)
	}
}
