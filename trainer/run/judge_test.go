package run

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
)

// tableJudge scores a checkpoint, and its parts, by its iteration; onJudge, when set, runs
// first.
type tableJudge struct {
	scores  map[int]float64
	parts   map[int][]float64
	judged  []int
	onJudge func(it int) error
}

func (j *tableJudge) Judge(_ context.Context, ck *checkpoint.File) (Verdict, error) {
	if j.onJudge != nil {
		if err := j.onJudge(ck.Iteration); err != nil {
			return Verdict{}, err
		}
	}
	j.judged = append(j.judged, ck.Iteration)
	return Verdict{Score: j.scores[ck.Iteration], Summary: "table", Parts: j.parts[ck.Iteration]}, nil
}

var errJudge = errors.New("judge failed")

// TestDriveKeepsTheBestJudgedCheckpoint runs the counter for 10 iterations with checkpoints
// every 3 under a judge, straight and interrupted in several places, and checks that every
// run judges iterations 3, 6, 9 and 10, keeps the best (a tie goes to the later, NaN never
// wins), and the best of each of two parts, and ends with the same checks log.
func TestDriveKeepsTheBestJudgedCheckpoint(t *testing.T) {
	ct, err := skills.NewContract(skills.Locomotion48())
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Algorithm: "counter", Task: "locomotion", Config: []byte(`{}`)}
	settings := Settings{Iterations: 10, CheckpointEvery: 3}
	scores := map[int]float64{3: 5, 6: 9, 9: math.NaN(), 10: 9}
	// Part 0 is best at 6 (NaN at 9 does not count), part 1 ties at 6 and 9 and is best at 10.
	parts := map[int][]float64{3: {1, 1}, 6: {4, 2}, 9: {math.NaN(), 2}, 10: {3, 9}}
	checkParts := func(t *testing.T, dir string) {
		t.Helper()
		for p, want := range []int{6, 10} {
			f, c, err := BestPartCheckpoint(dir, p)
			if err != nil || f.Iteration != want || c.Iteration != want {
				t.Fatalf("BestPartCheckpoint(%d) = %v: want iteration %d", p, err, want)
			}
		}
	}

	// drive runs from the directory's checkpoint (or afresh) to the end or an interruption.
	drive := func(t *testing.T, dir string, judge *tableJudge, cancelAfter int) error {
		opt := Options{Dir: dir, Quiet: true, Resume: true, Judge: judge}
		file, err := Open(opt, id, settings)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		if file != nil {
			done = file.Iteration
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		loop := &counter{id: id, c: ct, it: done, cancel: func(it int) {
			if it == cancelAfter {
				cancel()
			}
		}}
		if judge.onJudge == nil {
			judge.onJudge = func(int) error { return ctx.Err() }
		}
		return Drive(ctx, Loop[record](loop), "count", settings, done, file == nil, opt, nil)
	}

	straight := t.TempDir()
	judge := &tableJudge{scores: scores, parts: parts}
	if err := drive(t, straight, judge, -1); err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 6, 9, 10}; !slices.Equal(judge.judged, want) {
		t.Fatalf("judged %v, want %v", judge.judged, want)
	}
	best, err := Selected(straight)
	if err != nil || best.Iteration != 10 || best.Score != 9 {
		t.Fatalf("Selected = %+v, %v; want iteration 10 (ties go to the later)", best, err)
	}
	if ck, err := checkpoint.Read(filepath.Join(straight, BestCheckpointFile)); err != nil || ck.Iteration != 10 {
		t.Fatalf("best checkpoint: %v", err)
	}
	checks, err := ReadChecks(straight)
	if err != nil || len(checks) != 4 || !checks[1].Best || checks[2].Best {
		t.Fatalf("checks %+v, %v: want 6 best, NaN at 9 not", checks, err)
	}
	if c := checks[2]; !slices.Equal(c.BestParts, []bool{false, true}) {
		t.Fatalf("check of 9: best parts %v, want part 1 only (a tie goes to the later, NaN never wins)", c.BestParts)
	}
	checkParts(t, straight)
	want, _ := os.ReadFile(filepath.Join(straight, ChecksFile))
	if _, err := os.Stat(filepath.Join(straight, ChecksPlot)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		// cancelAfter cancels the run after that iteration; cancelInJudge in the judging of it.
		cancelAfter, cancelInJudge int
		judgedFirst, judgedThen    []int
	}{
		{name: "between checkpoints", cancelAfter: 5, judgedFirst: []int{3}, judgedThen: []int{6, 9, 10}},
		{name: "while judging", cancelInJudge: 6, judgedFirst: []int{3}, judgedThen: []int{6, 9, 10}},
		// Cancelled in iteration 6: its checkpoint is saved but not judged until the resume.
		{name: "in a checkpoint's iteration", cancelAfter: 6, judgedFirst: []int{3}, judgedThen: []int{6, 9, 10}},
		{name: "after a judged checkpoint", cancelAfter: 7, judgedFirst: []int{3, 6}, judgedThen: []int{9, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first := &tableJudge{scores: scores, parts: parts}
			if tc.cancelInJudge > 0 {
				ctx, cancel := context.WithCancel(context.Background())
				first.onJudge = func(it int) error {
					if it == tc.cancelInJudge {
						cancel()
					}
					return ctx.Err()
				}
			}
			err := drive(t, dir, first, tc.cancelAfter)
			if tc.cancelInJudge > 0 {
				// The harness's context is not the judge's here; the judge's error stops the run.
				if err == nil || !errors.Is(err, context.Canceled) {
					t.Fatalf("judge cancelled: Drive = %v", err)
				}
			} else if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Drive = %v", err)
			}
			then := &tableJudge{scores: scores, parts: parts}
			if err := drive(t, dir, then, -1); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(first.judged, tc.judgedFirst) || !slices.Equal(then.judged, tc.judgedThen) {
				t.Fatalf("judged %v then %v, want %v then %v", first.judged, then.judged, tc.judgedFirst, tc.judgedThen)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, ChecksFile)); !bytes.Equal(got, want) {
				t.Fatalf("checks log after resume:\n%s\nwant (straight run):\n%s", got, want)
			}
			if best, err := Selected(dir); err != nil || best.Iteration != 10 {
				t.Fatalf("Selected = %+v, %v", best, err)
			}
			checkParts(t, dir)
		})
	}

	t.Run("judge error", func(t *testing.T) {
		dir := t.TempDir()
		j := &tableJudge{scores: scores, onJudge: func(it int) error {
			if it == 6 {
				return errJudge
			}
			return nil
		}}
		if err := drive(t, dir, j, -1); !errors.Is(err, errJudge) {
			t.Fatalf("Drive = %v, want the judge's error", err)
		}
	})
	t.Run("parts that come and go", func(t *testing.T) {
		j := &tableJudge{scores: scores, parts: map[int][]float64{3: {1, 2}, 6: {1}}}
		if err := drive(t, t.TempDir(), j, -1); err == nil || !strings.Contains(err.Error(), "1 parts, earlier checks 2") {
			t.Fatalf("Drive = %v, want the change in parts refused", err)
		}
	})
	t.Run("no checks", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := Selected(dir); !errors.Is(err, ErrNoChecks) {
			t.Fatalf("Selected of an unjudged run = %v", err)
		}
		if _, _, err := BestPartCheckpoint(dir, 0); !errors.Is(err, ErrNoChecks) {
			t.Fatalf("BestPartCheckpoint of an unjudged run = %v", err)
		}
	})
}

func TestReadChecksRefusesMalformedLines(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      int
		bad       bool
	}{
		{"empty", "", 0, false},
		{"cut last line", `{"iteration":3,"score":1,"summary":"","best":true}` + "\n" + `{"iterat`, 1, false},
		{"bad line inside", `{"iteration":3` + "\n" + `{"iteration":6,"score":1,"summary":"","best":true}` + "\n", 0, true},
		{"not JSON", "x\ny\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ChecksFile), []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			checks, err := ReadChecks(dir)
			if (err != nil) != tc.bad || len(checks) != tc.want {
				t.Fatalf("ReadChecks = %d checks, %v", len(checks), err)
			}
		})
	}
}
