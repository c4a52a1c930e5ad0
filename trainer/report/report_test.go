package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/trainer/eval"
)

func TestCompare(t *testing.T) {
	filtered := fixtureResult()
	unfiltered := fixtureResult()
	unfiltered.FilterReference = nil
	for i := range unfiltered.Subjects {
		unfiltered.Subjects[i].Passed = nil
	}
	lonely := fixtureResult()
	for i := 2; i < len(lonely.Subjects); i++ {
		no := false
		lonely.Subjects[i].Passed = &no
	}
	// Nearest passing neighbours in the fixture: the two iterations of a skill, and for the one
	// passing latent of skill 2 the nearest of skills 0 and 1.
	d := filtered.Distances
	skill2 := min(d[6][1], d[6][2], d[6][3], d[6][4])
	for _, tc := range []struct {
		name  string
		res   *eval.Result
		want  Comparison
		share float64
	}{
		{"filtered", filtered, Comparison{Latents: 6, Passing: 5, Filtered: true, Modes: []string{"left", "right", "over"},
			MeanMinDistance: (2*d[1][2] + 2*d[3][4] + skill2) / 5, MeanReturn: (8 + 9 + 7 + 7.5 + 9.5) / 5, BestReturn: 9.5, ExpertReturn: 10}, 5.0 / 6},
		{"unfiltered: every subject is a latent", unfiltered, Comparison{Latents: 7, Passing: 7, Modes: []string{"left", "right", "over"},
			MeanMinDistance: (2*d[1][2] + 2*d[3][4] + d[0][5] + min(d[5][0], d[5][6]) + d[6][5]) / 7, MeanReturn: (10 + 8 + 9 + 7 + 7.5 + 3 + 9.5) / 7, BestReturn: 10, ExpertReturn: math.NaN()}, 1},
		{"one passing latent has no nearest other", lonely, Comparison{Latents: 6, Passing: 1, Filtered: true, Modes: []string{"left"},
			MeanMinDistance: math.NaN(), MeanReturn: 8, BestReturn: 8, ExpertReturn: 10}, 1.0 / 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare("run", tc.res)
			tc.want.Run = "run"
			same := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 || (math.IsNaN(a) && math.IsNaN(b)) }
			if got.Latents != tc.want.Latents || got.Passing != tc.want.Passing || got.Filtered != tc.want.Filtered ||
				!slices.Equal(got.Modes, tc.want.Modes) || !same(got.MeanMinDistance, tc.want.MeanMinDistance) ||
				!same(got.MeanReturn, tc.want.MeanReturn) || !same(got.BestReturn, tc.want.BestReturn) ||
				!same(got.ExpertReturn, tc.want.ExpertReturn) || !same(got.Share(), tc.share) {
				t.Fatalf("got %+v (share %v)\nwant %+v (share %v)", got, got.Share(), tc.want, tc.share)
			}
		})
	}
}

func TestRobustnessTable(t *testing.T) {
	rb := robustness(fixtureResult())
	if want := []string{"obstacle", "obstacle_fence_left", "obstacle_fence_right", "obstacle_fenced"}; !slices.Equal(rb.Worlds, want) {
		t.Fatalf("worlds %q, want %q", rb.Worlds, want)
	}
	// The best latent per world leaves the reference out: its 0.6 with the left fence is beaten
	// by skill1-iter2's 0.95, and its 0.5 on the obstacle course by skill2-iter2's 0.8.
	if want := []float64{0.8, 0.95, 0.97, 0.4}; !slices.EqualFunc(rb.Best, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Fatalf("best %v, want %v", rb.Best, want)
	}
	if len(rb.Rows) != 7 || !rb.Rows[0].Reference || rb.Rows[0].Label != "SMODICE-expert" || rb.Rows[3].Rates[1] != 0.9 {
		t.Fatalf("rows %+v", rb.Rows)
	}
	plain := fixtureResult()
	for i := range plain.Subjects {
		plain.Subjects[i].WorldGoalRate = nil
	}
	if rb := robustness(plain); rb != nil {
		t.Fatalf("a result without other worlds has a fence table: %+v", rb)
	}
}

// The table after a switch sets each candidate's rate after a switch beside its rate from the
// start in the world matching what blocked (the task's own world: its goal rate there).
func TestAfterSwitchTable(t *testing.T) {
	tb := afterSwitch(fixtureResult())
	want := []AfterSwitchRow{
		{Label: "skill1-iter2 (latent 4)", World: "obstacle_fence_left", Switches: 30, Goal: 6, Fell: 1, Rate: 0.2, FromStart: 0.95},
		{Label: "skill2-iter2 (latent 6)", World: "obstacle", Switches: 3, Goal: 1, Rate: 1.0 / 3, FromStart: 0.8, BelowMin: true},
	}
	near := func(a, b AfterSwitchRow) bool {
		return a.Label == b.Label && a.World == b.World && a.Switches == b.Switches && a.Goal == b.Goal && a.Fell == b.Fell &&
			a.BelowMin == b.BelowMin && math.Abs(a.Rate-b.Rate) < 1e-12 && math.Abs(a.FromStart-b.FromStart) < 1e-12
	}
	if tb == nil || tb.Start != 2 || !slices.EqualFunc(tb.Rows, want, near) {
		t.Fatalf("table %+v, want rows %+v", tb, want)
	}
	plain := fixtureResult()
	plain.AfterSwitch = nil
	if tb := afterSwitch(plain); tb != nil {
		t.Fatalf("a result without runs after a switch has a table: %+v", tb)
	}
}

func TestPCA(t *testing.T) {
	// Points on a line along (1, 1, 0) with a little spread along (0, 0, 1): PC1 carries almost
	// all the variance, and projected distances along it are the distances along the line.
	x := [][]float64{{0, 0, 0}, {1, 1, 0.1}, {2, 2, 0}, {3, 3, -0.1}}
	p := pca(x)
	if p.Explained[0] < 0.99 || p.Explained[0]+p.Explained[1] < 0.999999 {
		t.Fatalf("explained %v", p.Explained)
	}
	if d := math.Abs(p.Points[3][0] - p.Points[0][0]); math.Abs(d-3*math.Sqrt2) > 1e-2 {
		t.Fatalf("PC1 spread %v, want %v", d, 3*math.Sqrt2)
	}
	// Identical points: nothing to project.
	if p := pca([][]float64{{1, 2}, {1, 2}}); p.Explained != [2]float64{} {
		t.Fatalf("identical points: %+v", p)
	}
	// One feature: a second component does not exist.
	p = pca([][]float64{{1}, {2}, {4}})
	if p.Explained != [2]float64{1, 0} || p.Points[2][1] != 0 {
		t.Fatalf("one feature: %+v", p)
	}
}

// srcs finds every src and href attribute of a page.
var srcs = regexp.MustCompile(`(?:src|href)="([^"]*)"`)

// renderFixture writes the report of two fixture runs (a Dual-Force-like one and a DOI-like
// one that recovers one mode) and returns its path and text.
func renderFixture(t *testing.T) (string, string) {
	t.Helper()
	doi := fixtureResult()
	for i := 1; i < len(doi.Subjects); i++ {
		doi.Subjects[i].Measured = []string{"over"}
	}
	var runs []*Run
	for name, res := range map[string]*eval.Result{"dualforce": fixtureResult(), "doi": doi} {
		run, err := Load(writeRun(t, name, res))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	slices.SortFunc(runs, func(a, b *Run) int { return strings.Compare(b.Name, a.Name) })
	path := filepath.Join(t.TempDir(), "report.html")
	if err := WriteFile(path, runs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

func TestReportIsSelfContained(t *testing.T) {
	_, page := renderFixture(t)
	for _, want := range []string{"Side by side", "Run dualforce", "Run doi", "Successor-feature distances", "(PCA)",
		"Top-down base paths per skill", "Training metrics: metrics.jsonl", "Training metrics: smodice/checks.jsonl", "Fence robustness", "3: left, right, over", "1: over",
		"Goal rate after a switch", "too few switches to store"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<link") {
		t.Error("the page loads scripts or stylesheets")
	}
	images := 0
	for _, m := range srcs.FindAllStringSubmatch(page, -1) {
		data, ok := strings.CutPrefix(html.UnescapeString(m[1]), "data:image/png;base64,")
		if !ok {
			t.Errorf("reference %.60q is not an embedded PNG", m[1])
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatalf("image %d: %v", images, err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("image %d: %v", images, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 300 {
			t.Errorf("image %d is %v", images, b)
		}
		images++
	}
	// Per run: returns, heat map, projection, traces, metrics, the SMODICE run's checks.
	if images != 12 {
		t.Fatalf("%d images, want 12", images)
	}
}

func TestLoadRefuses(t *testing.T) {
	empty := t.TempDir()
	if _, err := Load(empty); !errors.Is(err, ErrEmptyRun) {
		t.Errorf("empty directory: %v", err)
	}
	file := filepath.Join(empty, "x")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Load(filepath.Join(empty, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	bad := fixtureResult()
	bad.Distances = bad.Distances[1:]
	dir := writeRun(t, "bad", bad)
	if _, err := Load(dir); !errors.Is(err, eval.ErrResult) || !strings.Contains(err.Error(), filepath.Join(dir, "eval", EvalFile)) {
		t.Errorf("malformed results: %v", err)
	}
	dir = writeRun(t, "cut", fixtureResult())
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"iteration\":1}\nnot json\n{\"iteration\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed metrics log: %v", err)
	}
}

// TestReportInChromium opens the page from disk in headless Chromium and checks the screenshot
// shows it: mostly not background, with the figures' colours in it.
func TestReportInChromium(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no headless browser: install Debian's chromium (make setup) to check the report renders")
	}
	page, _ := renderFixture(t)
	shot := filepath.Join(t.TempDir(), "report.png")
	if dir := os.Getenv("DUALFORCE_REPORT_SCREENSHOT"); dir != "" {
		shot = filepath.Join(dir, "report.png") // to look at it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--window-size=1400,5000", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	ink, colour := countInk(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot %v: %d of %d pixels not background, %d coloured", img.Bounds(), ink, total, colour)
	if ink < total/20 || colour < total/100 {
		t.Fatalf("the screenshot looks blank: %d of %d pixels not background, %d coloured", ink, total, colour)
	}
}

// countInk counts the pixels that are not the white background, and of those the coloured ones
// (figures; the page's text is grey).
func countInk(img image.Image) (ink, colour int) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 240 || g < 240 || bl < 240 {
				ink++
			}
			if max(r, g, bl)-min(r, g, bl) > 60 {
				colour++
			}
		}
	}
	return ink, colour
}
