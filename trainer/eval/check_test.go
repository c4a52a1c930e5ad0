package eval

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/skills/skillstest"
	"github.com/dualforce/dualforce/trainer/collect"
)

func TestCheckerAcceptsOnlyWhatItCanRun(t *testing.T) {
	loco, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	nav, err := skills.NewContract(skills.Navigation171())
	if err != nil {
		t.Fatal(err)
	}
	fast := loco
	fast.PolicyHz = 2 * skills.DefaultPolicyHz
	for _, tc := range []struct {
		name, task string
		contract   skills.Contract
		ok         bool
	}{
		{"locomotion bank, locomotion task", collect.TaskLocomotion, loco, true},
		{"navigation bank, navigation task", collect.TaskNavigation, nav, true},
		{"navigation bank, locomotion task", collect.TaskLocomotion, nav, false},
		{"locomotion bank, navigation task", collect.TaskNavigation, loco, false},
		{"another policy rate", collect.TaskLocomotion, fast, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewChecker(tc.task, "", 3)
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.Seed != CheckSeed || c.Config.Rollouts != 3 {
				t.Fatalf("checker seed %d, rollouts %d", c.Config.Seed, c.Config.Rollouts)
			}
			err = c.Accepts(&tc.contract)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Fatalf("Accepts = %v, want ok %v", err, tc.ok)
			}
		})
	}
	if _, err := NewChecker("swim", "", 3); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewChecker(swim) = %v", err)
	}
	// The data's world: a built-in one or a scenario file, loaded at once; a file that is not
	// there is an error before any training.
	file := filepath.Join(t.TempDir(), "high_box.yaml")
	if err := os.WriteFile(file, []byte("name: high_box\nbox: {x: 1.0, height: 0.10}\ngoal: {x: 2.0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for world, want := range map[string]string{"": "", "obstacle_fenced": "obstacle_fenced", file: "high_box"} {
		c, err := NewChecker(collect.TaskNavigation, world, 3)
		if err != nil || (want == "") != (c.Config.Scenario == nil) || (want != "" && c.Config.Scenario.Name != want) {
			t.Errorf("NewChecker in world %q: scenario %+v, %v; want %q", world, c.Config.Scenario, err, want)
		}
	}
	if _, err := NewChecker(collect.TaskNavigation, filepath.Join(t.TempDir(), "gone.yaml"), 3); !errors.Is(err, ErrConfig) {
		t.Errorf("NewChecker in a world file that is not there: %v, want ErrConfig", err)
	}
	// A negative number of rollouts is the task's: navigation's goal rate needs more.
	for task, want := range map[string]int{collect.TaskLocomotion: 10, collect.TaskNavigation: 30} {
		if c, err := NewChecker(task, "", -1); err != nil || c.Config.Rollouts != want {
			t.Errorf("NewChecker(%s, -1): %d rollouts, %v; want %d", task, c.Config.Rollouts, err, want)
		}
	}
}

// A Checker scores a walking policy above one that stands, by the mean return Evaluate
// measures on the checker's rollouts.
func TestCheckerScoresByReturn(t *testing.T) {
	checker := Checker{Config: shortConfig(t, 2, 3)}
	checker.Config.Seed = CheckSeed
	score := func(b *skills.Bank) float64 {
		t.Helper()
		v, err := checker.JudgeBank(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Evaluate(context.Background(), checker.Config, Latents(b)[:1])
		if err != nil {
			t.Fatal(err)
		}
		if v.Score != res.Subjects[0].MeanReturn || !strings.Contains(v.Summary, "over 2 rollouts of 3 s, 0% falls") || v.Parts != nil {
			t.Fatalf("verdict %+v, Evaluate's mean return %v", v, res.Subjects[0].MeanReturn)
		}
		return v.Score
	}
	walking, standing := score(trotBank(t)), score(constantBank(t, [skills.NumJoints]float32{}))
	t.Logf("judged: trot %.1f, standing %.1f", walking, standing)
	if !(walking > standing+20) {
		t.Fatalf("the trot scored %.1f, standing %.1f", walking, standing)
	}
	// A bank of several latents (a Dual-Force checkpoint's skills) scores their mean: two
	// slots holding different poses.
	var crouch [skills.NumJoints]float32
	for j := range crouch {
		crouch[j] = 0.3
	}
	two := *skillstest.ConstantSlots(t, simContract(t), [skills.NumJoints]float32{}, crouch)
	v, err := checker.JudgeBank(context.Background(), &two)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(context.Background(), checker.Config, Latents(&two))
	if err != nil {
		t.Fatal(err)
	}
	mean := (res.Subjects[0].MeanReturn + res.Subjects[1].MeanReturn) / 2
	t.Logf("two latents judged %.1f: %s", v.Score, v.Summary)
	if math.Abs(v.Score-mean) > 1e-9*math.Abs(mean) || !strings.Contains(v.Summary, "of 2 latents") ||
		len(v.Parts) != 2 || v.Parts[0] != res.Subjects[0].MeanReturn || v.Parts[1] != res.Subjects[1].MeanReturn {
		t.Fatalf("two latents judged %+v, want their mean %v", v, mean)
	}
	if _, err := checker.JudgeBank(context.Background(), &skills.Bank{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a bank without latents: %v", err)
	}
}
