package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/eval"
)

// figure is one embedded image with its caption.
type figure struct {
	Title, Caption string
	Src            template.URL // a data: URI
}

func dataURI(png []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
}

// runSection is one run's part of the page.
type runSection struct {
	Name, Dir, EvalPath string
	Eval                *eval.Result
	Summary             string
	Figures             []figure
	Robustness          *Robustness
	AfterSwitch         *AfterSwitchTable
	Notes               []string
}

type page struct {
	Title       string
	Comparisons []Comparison
	Runs        []runSection
}

// Write renders the report of runs as one self-contained HTML page to w.
func Write(w io.Writer, runs []*Run) error {
	pg := page{Title: "dualforce report: " + runNames(runs)}
	for _, run := range runs {
		sec, err := section(run)
		if err != nil {
			return err
		}
		if run.Eval != nil {
			pg.Comparisons = append(pg.Comparisons, Compare(run.Name, run.Eval))
		}
		pg.Runs = append(pg.Runs, sec)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, &pg); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteFile renders the report into the file at path, replaced atomically.
func WriteFile(path string, runs []*Run) error {
	return skills.WriteFileAtomic(path, 0o644, func(w io.Writer) error { return Write(w, runs) })
}

func runNames(runs []*Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

func section(run *Run) (runSection, error) {
	sec := runSection{Name: run.Name, Dir: run.Dir, EvalPath: run.EvalPath, Eval: run.Eval}
	add := func(title, caption string, png []byte, err error) error {
		if err != nil {
			return fmt.Errorf("report: %s: %s: %w", run.Name, title, err)
		}
		if png != nil {
			sec.Figures = append(sec.Figures, figure{Title: title, Caption: caption, Src: dataURI(png)})
		}
		return nil
	}
	if res := run.Eval; res != nil {
		sec.Summary = evalSummary(res)
		png, err := returnsFigure(res)
		if err := add("Returns", "Mean task return of every evaluated latent (± std over rollouts), fall rate under each name.", png, err); err != nil {
			return sec, err
		}
		png, err = distanceFigure(res)
		if err := add("Successor-feature distances", "Pairwise l2 distances between online successor features of the reference (row 1) and the latents that pass the filter (every latent when no filter was applied).", png, err); err != nil {
			return sec, err
		}
		png, err = projectionFigure(res)
		if err := add("2-D projection of the successor features (PCA)", "Principal-component projection (PCA, not UMAP) of the same online successor features; colour is the skill slot.", png, err); err != nil {
			return sec, err
		}
		if png == nil {
			sec.Notes = append(sec.Notes, "No projection: fewer than two subjects pass the filter, or their successor features are all the same.")
		}
		png, err = tracesFigure(res)
		if err := add("Top-down base paths per skill", fmt.Sprintf("Base paths of the kept rollouts of every evaluated latent, passing the filter or not (at most %d per panel), seen from above over the evaluation world, coloured by base height above the terrain.", maxPanelPaths), png, err); err != nil {
			return sec, err
		}
		if png == nil {
			sec.Notes = append(sec.Notes, "No top-down paths: the evaluation kept none (dualforce eval --paths).")
		}
		sec.Robustness = robustness(res)
		sec.AfterSwitch = afterSwitch(res)
	}
	for i := range run.Logs {
		l := &run.Logs[i]
		png, omitted, err := metricsFigure(l)
		caption := fmt.Sprintf("Every numeric column of %s (%d records); indexed columns (name_0, name_1, ...) share a panel, one curve per index.", l.Path, len(l.Series.Iteration))
		if omitted > 0 {
			caption += fmt.Sprintf(" %d further panels left out.", omitted)
		}
		if err := add("Training metrics: "+l.Path, caption, png, err); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

func evalSummary(res *eval.Result) string {
	s := fmt.Sprintf("%s in %s: %d subjects, %d rollouts of %.1f s each, seed %d; online SFs are the ", res.Task, res.World, len(res.Subjects), res.Rollouts, res.EpisodeSeconds, res.Seed)
	if res.Discount == 1 {
		s += "episode mean of phi"
	} else {
		s += fmt.Sprintf("discounted mean of phi (discount %g)", res.Discount)
	}
	if ref := reference(res); ref >= 0 {
		s += fmt.Sprintf("; filter: >= %.0f%% of %s's return", 100*res.FilterFraction, res.Subjects[ref].Label)
	} else {
		s += "; no filter applied (no reference)"
	}
	if res.Seconds > 0 && res.PolicySteps > 0 {
		s += fmt.Sprintf("; %d policy steps in %.0f s (%.0f steps/s)", res.PolicySteps, res.Seconds, float64(res.PolicySteps)/res.Seconds)
	}
	return s + "."
}

// num formats a number for a table cell, "–" for NaN.
func num(format string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":  num,
	"pct":  func(v float64) string { return num("%.0f%%", 100*v) },
	"join": strings.Join,
	"good": func(v float64) bool { return v >= 0.9 },
	"verdict": func(p *bool) string {
		switch {
		case p == nil:
			return ""
		case *p:
			return "pass"
		}
		return "fail"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; background: #fff; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #eef; }
td.good { background: #cfc; }
tr.best td { font-weight: bold; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; }
.note { color: #a50; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Comparisons}}
<h2>Side by side</h2>
<table>
<tr><th>run</th><th>latents</th><th>passing the filter</th><th>share</th><th>distinct modes among passing</th><th>mean min SF distance</th><th>mean return (passing)</th><th>best return</th><th>reference return</th></tr>
{{range .Comparisons}}<tr><td>{{.Run}}</td><td>{{.Latents}}</td><td>{{.Passing}}{{if not .Filtered}} (no filter){{end}}</td><td>{{pct .Share}}</td><td>{{len .Modes}}{{if .Modes}}: {{join .Modes ", "}}{{end}}</td><td>{{num "%.3f" .MeanMinDistance}}</td><td>{{num "%.2f" .MeanReturn}}</td><td>{{num "%.2f" .BestReturn}}</td><td>{{num "%.2f" .ExpertReturn}}</td></tr>
{{end}}</table>
<p>Modes are the behaviour tags measured in evaluation (base height low, middle, high; route left, right, over). The mean minimum SF distance is taken over the passing latents, each to its nearest other passing latent.</p>
{{end}}
{{range .Runs}}
<h2>Run {{.Name}}</h2>
<p>Directory {{.Dir}}{{if .EvalPath}}; evaluation {{.EvalPath}}{{end}}.</p>
{{if .Summary}}<p>{{.Summary}}</p>{{end}}
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{range .Figures}}
<figure><h3>{{.Title}}</h3><img src="{{.Src}}" alt="{{.Title}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}
{{with .Robustness}}
<h3>Fence robustness: goal rate per world</h3>
<table>
<tr><th>latent</th><th>filter</th>{{range .Worlds}}<th>{{.}}</th>{{end}}</tr>
<tr class="best"><td>best latent</td><td></td>{{range .Best}}<td{{if good .}} class="good"{{end}}>{{pct .}}</td>{{end}}</tr>
{{range .Rows}}<tr{{if .Reference}} class="best"{{end}}><td>{{.Label}}</td><td>{{verdict .Passed}}</td>{{range .Rates}}<td{{if good .}} class="good"{{end}}>{{pct .}}</td>{{end}}</tr>
{{end}}</table>
<p>Green: at least 90% of rollouts reached the goal.</p>
{{end}}
{{with .AfterSwitch}}
<h3>Goal rate after a switch</h3>
<p>Runs that started latent {{.Start}} (the runtime's start) with switching on and one candidate to switch to; per candidate and the world matching what blocked when the runtime switched: the runs that switched to it, how many of those then reached the goal or fell, beside its goal rate from the start in that world.</p>
<table>
<tr><th>latent</th><th>blocked as in</th><th>switched</th><th>goal</th><th>fell</th><th>after a switch</th><th>from the start</th></tr>
{{range .Rows}}<tr><td>{{.Label}}</td><td>{{.World}}</td><td>{{.Switches}}</td><td>{{.Goal}}</td><td>{{.Fell}}</td><td{{if good .Rate}} class="good"{{end}}>{{pct .Rate}}{{if .BelowMin}} (too few switches to store){{end}}</td><td>{{pct .FromStart}}</td></tr>
{{end}}</table>
{{end}}
{{end}}
</body>
</html>
`))
