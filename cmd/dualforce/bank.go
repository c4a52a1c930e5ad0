package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dualforce/dualforce/skills"
)

func init() {
	register(command{name: "bank", summary: "work with skill banks (inspect: the latents and what evaluation measured of them)",
		run: methods(bankUsage, "bank subcommand", map[string]runFunc{"inspect": runBankInspect, "merge": runBankMerge})})
}

const bankUsage = `Usage: dualforce bank <subcommand> [flags] [arguments]

Subcommands:
  inspect <bank.npz>   check a skill bank and summarise its latents and their measurements
  merge --out FILE <bank.npz>...
                       one bank holding the slots and latents of several banks of one data set
`

const bankInspectUsage = `Usage: dualforce bank inspect [--top N] <bank.npz>

Reads a skill bank (format v1 or v2, checked as the runtime checks it) and prints:
  the bank        producer, observation layout, slots, latents and their width, policy head
                  (a single Gaussian or a K-component Gaussian mixture), FRE encoder, the
                  observation clip when it has one
  measured        what 'dualforce eval --write-bank' stored: how many latents have an online
                  return and its range, how many passed the filter (>= 50% of the
                  SMODICE-expert's return), failed it or were not judged, every tag with its
                  count, and per evaluation world the latents with a goal rate, their mean rate
                  and how many reached the goal in >= 90% of their rollouts
  per slot        latents, measured, passed, and the best online return with its latent
  top latents     the first --top latents (0: all) in this order: measured and not filtered
                  out, in a navigation bank the highest mean goal rate over its worlds first,
                  else (and on ties) the highest online return (the first is the latent
                  'skillrt run' starts with); then those that failed the filter, in the same
                  order; then the unmeasured ones in bank order. One row each: index, slot,
                  iteration, name, sigmoid(mu), phi, online return, filter, tags, and the goal
                  rate per world ("-": not measured)

A bank that fails a check is reported with the reason and exit status 1.
`

func runBankInspect(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bank inspect", bankInspectUsage, stderr)
	top := fs.Int("top", 20, "latents to list (0: all)")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if *top < 0 {
		return usagef("--top %d: want 0 (all) or more", *top)
	}
	b, err := skills.ReadBank(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bank: %s\n", fs.Arg(0))
	return writeBankSummary(stdout, b, *top)
}

const bankMergeUsage = `Usage: dualforce bank merge --out FILE <bank.npz>[:SLOTS] <bank.npz>[:SLOTS]...

Writes one bank holding every slot and latent of the given banks, in order: skills trained by
different runs on one data set (several seeds, a Dual-Force run and a SMODICE-expert, behaviour
clones) side by side, for the runtime to start with, switch between and recall by what they
were measured to do. A bank named as FILE:SLOTS (comma-separated slot indices, e.g.
run2.npz:1 or run1.npz:0,2) gives only those slots and their latents, in that order: the
skills of each run worth keeping, so that the merged bank stays small (a Dual-Force bank of
the paper-scale navigation set is 3.5 MB, two of them 5.8 MB). The banks must share their
contract (layout, normaliser, feature projection, gains, rates: trained on the same data set),
latent width and policy head, and carry the same FRE encoder or none.

The merged bank is unevaluated: each source was judged against its own filter and rollouts, so
online returns and successor features, filter results and goal rates are dropped (tags are kept;
an evaluation replaces the measured ones). Evaluate it with 'dualforce eval --write-bank' (and
--expert, the SMODICE-expert bank whose return sets the filter). A latent name used in more
than one bank gets the bank's file name (without .npz) prepended, "file/name". The output is
written atomically; nothing is written when a check fails.
`

func runBankMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bank merge", bankMergeUsage, stderr)
	out := fs.String("out", "", "bank to write (required)")
	if err := parseFlags(fs, args, oneOrMore); err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("--out is required")
	case fs.NArg() < 2:
		return usagef("want two or more banks to merge, got %d", fs.NArg())
	}
	if err := checkOutputFiles(*out); err != nil {
		return err
	}
	banks := make([]*skills.Bank, fs.NArg())
	labels := make([]string, fs.NArg())
	for i, arg := range fs.Args() {
		path, slots, err := parseBankSlots(arg)
		if err != nil {
			return err
		}
		b, err := skills.ReadBank(path)
		if err != nil {
			return err
		}
		if slots != nil {
			if b, err = b.KeepSlots(slots); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		banks[i], labels[i] = b, strings.TrimSuffix(filepath.Base(path), ".npz")
	}
	merged, err := skills.Merge(mergeProducer, labels, banks...)
	if err != nil {
		return err
	}
	if err := saveBank(*out, merged); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bank: %s\n", *out)
	return writeBankSummary(stdout, merged, 0)
}

// parseBankSlots splits a bank merge argument FILE[:SLOTS]: a suffix of a colon and
// comma-separated digits names slots (nil: all); any other colon belongs to the file name.
func parseBankSlots(arg string) (path string, slots []int, err error) {
	i := strings.LastIndexByte(arg, ':')
	list := arg[i+1:]
	if i < 0 || strings.Trim(list, "0123456789,") != "" {
		return arg, nil, nil
	}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return "", nil, usagef("%s: slots %q: want comma-separated slot indices", arg, list)
		}
		slots = append(slots, n)
	}
	return arg[:i], slots, nil
}

// mergeProducer is the producer of a merged bank.
const mergeProducer = "dualforce bank merge"

// highGoalRate is the goal rate the summary counts latents at or above, the robustness
// experiment's bar (issue 16, Q3).
const highGoalRate = 0.9

// writeBankSummary prints the bank's summary and its first top ranked latents (0: all).
func writeBankSummary(w io.Writer, b *skills.Bank, top int) error {
	fre := "none"
	if b.FRE != nil {
		fre = fmt.Sprintf("%d anchors in %d subsets", b.FRE.Anchors.Shape[0], b.FRE.Subsets)
	}
	head := "single Gaussian"
	if b.Components > 1 {
		head = fmt.Sprintf("%d-component Gaussian mixture", b.Components)
	}
	fmt.Fprintf(w, "producer %q, layout %s, %d slots, %d latents of %d values, policy head: %s, FRE encoder: %s\n",
		b.Producer, b.Contract.Layout.Name, len(b.Slots), len(b.Latents), b.LatentDim, head, fre)
	if c := b.Contract.Normaliser.Clip; c > 0 {
		fmt.Fprintf(w, "observations: standardised values clamped to +-%g\n", c)
	}

	var returns []float64
	passed, failed := 0, 0
	tags := map[string]int{}
	worlds := map[string][]float32{}
	for _, l := range b.Latents {
		in := l.Info
		if in.OnlineReturn != nil {
			returns = append(returns, *in.OnlineReturn)
		}
		if in.PassedFilter != nil {
			if *in.PassedFilter {
				passed++
			} else {
				failed++
			}
		}
		for _, t := range in.Tags {
			tags[t]++
		}
		for world, r := range in.GoalRate {
			worlds[world] = append(worlds[world], r)
		}
	}
	n := len(b.Latents)
	if len(returns) == 0 {
		fmt.Fprintln(w, "measured: no latent has an online return (the bank was not evaluated with --write-bank)")
	} else {
		slices.Sort(returns)
		fmt.Fprintf(w, "measured: %d of %d latents have an online return (min %.2f, median %.2f, max %.2f); filter: %d passed, %d failed, %d not judged\n",
			len(returns), n, returns[0], returns[len(returns)/2], returns[len(returns)-1], passed, failed, n-passed-failed)
	}
	if len(tags) > 0 {
		var parts []string
		for _, t := range slices.Sorted(maps.Keys(tags)) {
			parts = append(parts, fmt.Sprintf("%s %d", t, tags[t]))
		}
		fmt.Fprintf(w, "tags: %s\n", strings.Join(parts, ", "))
	}
	worldNames := slices.Sorted(maps.Keys(worlds))
	for _, world := range worldNames {
		rates := worlds[world]
		mean, high := 0.0, 0
		for _, r := range rates {
			mean += float64(r) / float64(len(rates))
			if r >= float32(highGoalRate) {
				high++
			}
		}
		fmt.Fprintf(w, "goal rate in %s: %d latents measured, mean %.2f, %d at >= %.0f%%\n", world, len(rates), mean, high, 100*highGoalRate)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "slot\tlatents\tmeasured\tpassed\tbest return")
	for s := range b.Slots {
		count, measured, ok, best := 0, 0, 0, -1
		for i, l := range b.Latents {
			if l.Info.Skill != s {
				continue
			}
			count++
			if r := l.Info.OnlineReturn; r != nil {
				measured++
				if best < 0 || *r > *b.Latents[best].Info.OnlineReturn {
					best = i
				}
			}
			if p := l.Info.PassedFilter; p != nil && *p {
				ok++
			}
		}
		bestText := "-"
		if best >= 0 {
			bestText = fmt.Sprintf("%.2f (latent %d)", *b.Latents[best].Info.OnlineReturn, best)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\n", s, count, measured, ok, bestText)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	order := b.Ranked()
	if top > 0 && top < len(order) {
		order = order[:top]
	}
	fmt.Fprintf(w, "top %d of %d latents:\n", len(order), n)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"latent", "slot", "iter", "name", "sigmoid(mu)", "phi", "return", "filter", "tags"}
	for _, world := range worldNames {
		header = append(header, "goal:"+world)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, i := range order {
		in := b.Latents[i].Info
		row := []string{fmt.Sprint(i), fmt.Sprint(in.Skill), fmt.Sprint(in.Iteration), orDash(in.Name),
			fmt.Sprintf("%.3f", in.SigmoidMu), fmt.Sprintf("%.3g", in.Phi), "-", "-", orDash(strings.Join(in.Tags, ","))}
		if in.OnlineReturn != nil {
			row[6] = fmt.Sprintf("%.2f", *in.OnlineReturn)
		}
		if p := in.PassedFilter; p != nil {
			row[7] = map[bool]string{true: "passed", false: "failed"}[*p]
		}
		for _, world := range worldNames {
			rate := "-"
			if r, ok := in.GoalRate[world]; ok {
				rate = fmt.Sprintf("%.2f", r)
			}
			row = append(row, rate)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
