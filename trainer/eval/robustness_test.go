package eval

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/sim/worlds"
	"github.com/dualforce/dualforce/skills"
)

// latentGrid is a bank's worth of subjects: iterations[i] latents of skill i, iterations 1, 2, ...
func latentGrid(iterations ...int) []Subject {
	b := &skills.Bank{}
	for skill, n := range iterations {
		for it := 1; it <= n; it++ {
			b.Latents = append(b.Latents, skills.Latent{Info: skills.LatentInfo{Skill: skill, Iteration: it}})
		}
	}
	out := make([]Subject, len(b.Latents))
	for i := range out {
		out[i] = Subject{Label: fmt.Sprint(i), Bank: b, Latent: i}
	}
	return out
}

func TestSubsample(t *testing.T) {
	// picks lists (skill, iteration) of what Subsample keeps.
	picks := func(s []Subject) [][2]int {
		var out [][2]int
		for _, x := range s {
			info := x.Bank.Latents[x.Latent].Info
			out = append(out, [2]int{info.Skill, info.Iteration})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		iterations []int
		n          int
		want       [][2]int
	}{
		{"all kept", []int{2, 2}, 0, [][2]int{{0, 1}, {0, 2}, {1, 1}, {1, 2}}},
		{"fewer than asked", []int{2, 1}, 10, [][2]int{{0, 1}, {0, 2}, {1, 1}}},
		{"first and last iterations of each skill", []int{5, 5, 5}, 6, [][2]int{{0, 1}, {0, 5}, {1, 1}, {1, 5}, {2, 1}, {2, 5}}},
		{"evenly over iterations", []int{9}, 3, [][2]int{{0, 1}, {0, 5}, {0, 9}}},
		{"the first skills take the remainder", []int{4, 4, 4}, 4, [][2]int{{0, 1}, {0, 4}, {1, 1}, {2, 1}}},
		{"a small skill gives its share away", []int{1, 6}, 4, [][2]int{{0, 1}, {1, 1}, {1, 3}, {1, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := picks(Subsample(latentGrid(tc.iterations...), tc.n))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Thousands of latents: exactly n, every skill equally, no latent twice.
	got := Subsample(latentGrid(1500, 1500, 1500), 90)
	count := map[int]int{}
	seen := map[int]bool{}
	for _, s := range got {
		count[s.Bank.Latents[s.Latent].Info.Skill]++
		if seen[s.Latent] {
			t.Fatalf("latent %d picked twice", s.Latent)
		}
		seen[s.Latent] = true
	}
	if len(got) != 90 || count[0] != 30 || count[1] != 30 || count[2] != 30 {
		t.Fatalf("%d picks, per skill %v", len(got), count)
	}
}

// The fence experiment runs the same subjects in the fenced worlds and records a goal rate per
// world: a robot standing still reaches the goal in none of them.
func TestRobustnessRecordsEveryWorld(t *testing.T) {
	bank, cfg := stillNavigation(t, 1, 0.5)
	subjects := Latents(bank)
	res, err := Evaluate(t.Context(), cfg, subjects)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Robustness(t.Context(), cfg, subjects, res, FenceWorlds[1:])
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].World != FenceWorlds[1] || runs[1].PolicySteps != 25 {
		t.Fatalf("world runs %+v", runs)
	}
	rates := res.Subjects[0].WorldGoalRate
	if len(rates) != 2 || rates["obstacle_fence_right"] != 0 || rates["obstacle_fenced"] != 0 {
		t.Fatalf("goal rates %v", rates)
	}
	// Every world's rollouts are kept (for their switches and where they ended), without paths.
	for _, w := range FenceWorlds[1:] {
		ros := res.Subjects[0].WorldRollouts[w]
		if len(ros) != cfg.Rollouts {
			t.Fatalf("%s: %d rollouts kept, want %d", w, len(ros), cfg.Rollouts)
		}
		for _, ro := range ros {
			if ro.GoalStep >= 0 || ro.Path != nil {
				t.Fatalf("%s: rollout %+v reached the goal or kept its path", w, ro)
			}
		}
	}
	if err := res.Validate(); err != nil {
		t.Fatal(err)
	}
	// A result read back from before world_rollouts existed has goal rates and no rollouts.
	res.Subjects[0].WorldRollouts = nil
	if _, err := Robustness(t.Context(), cfg, subjects, res, FenceWorlds[2:]); err != nil || len(res.Subjects[0].WorldRollouts[FenceWorlds[2]]) != cfg.Rollouts {
		t.Fatalf("fences again on a result with goal rates only: %v, %d rollouts", err, len(res.Subjects[0].WorldRollouts[FenceWorlds[2]]))
	}
	if _, err := Robustness(t.Context(), cfg, subjects, res, []string{"moon"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("an unknown world: %v", err)
	}
	if _, err := Robustness(t.Context(), cfg, nil, res, FenceWorlds); !errors.Is(err, ErrConfig) {
		t.Fatalf("mismatched subjects: %v", err)
	}
	// The fenced worlds are variants of cfg's world: one with no box has no fences to stand in
	// line with.
	noBox, err := worlds.Parse([]byte("name: open\ngoal: {x: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scenario = noBox
	if _, err := Robustness(t.Context(), cfg, subjects, res, FenceWorlds); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "need a box") {
		t.Fatalf("fenced variants of a world without a box: %v", err)
	}
}

// The fenced worlds of the built-in obstacle world are the built-in fenced worlds; those of
// another world keep its box and goal and take the fences and jitter of the fenced world.
func TestFencedVariant(t *testing.T) {
	obstacle, err := worlds.Builtin("obstacle")
	if err != nil {
		t.Fatal(err)
	}
	high, err := worlds.Parse([]byte("name: high\nbox: {x: 1.1, height: 0.10}\ngoal: {x: 2.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range FenceWorlds {
		want, err := worlds.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FencedVariant(obstacle, name)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s of the obstacle world: %+v, %v; want the built-in %+v", name, got, err, want)
		}
		v, err := FencedVariant(high, name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Name != name || v.Box.Height != 0.10 || v.Box.X != 1.1 || v.Goal.X != 2.2 || !reflect.DeepEqual(v.Fences, want.Fences) || !reflect.DeepEqual(v.Jitter, want.Jitter) {
			t.Errorf("%s of the high box world: %+v box %+v fences %+v", name, v, *v.Box, *v.Fences)
		}
	}
	if high.Fences != nil || high.Name != "high" {
		t.Errorf("FencedVariant changed its world: %+v", high)
	}
	if _, err := FencedVariant(obstacle, "moon"); err == nil {
		t.Error("FencedVariant of an unknown fenced world succeeded")
	}
}
