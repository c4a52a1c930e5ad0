package bc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/datafile"
	"github.com/dualforce/dualforce/trainer/dataset"
	"github.com/dualforce/dualforce/trainer/export"
	"github.com/dualforce/dualforce/trainer/metrics"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/prep"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// ExpertLabel selects every transition of the dataset's expert modes.
const ExpertLabel = "expert"

// Tag marks banks made by behaviour cloning.
const Tag = "bc"

// Producer is recorded in the banks this package writes.
const Producer = "dualforce fit bc"

// Config sets up a fit. DefaultConfig gives the project's values.
type Config struct {
	// Policy is the learner's: its shape, rate, batch and averaging (with
	// Average set, the fit's result is the moving average of its
	// parameters). A clone is not conditioned on a latent.
	Policy wbc.Config
	Steps  int
	Seed   uint64
}

// DefaultConfig is the trained policies' shape (wbc.DefaultConfig: 256-256
// ReLU) with batches of 1024 for 20000 steps at Adam 3e-4 and the last
// iterate: that many steps are enough at the slower rate (a clone of the
// navigation expert reached the goal in 30 of 30 rollouts, 0.01 m from it),
// and the baselines reported were fitted so.
func DefaultConfig() Config {
	p := wbc.DefaultConfig()
	p.LR, p.Average, p.Batch = 3e-4, 0, 1024
	return Config{Policy: p, Steps: 20000, Seed: 1}
}

// ErrUnknownMode reports a label that names no behaviour of the dataset.
var ErrUnknownMode = errors.New("bc: no such behaviour in the dataset")

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("bc: bad configuration")

// Selection is the transitions of one behaviour.
type Selection struct {
	// Label is what the bank calls the behaviour: the mode's name, or for
	// ExpertLabel the expert mode's name when there is exactly one.
	Label string
	Rows  []int
}

// Select returns the transitions of the behaviour label: a mode name of
// the archive's manifest, or ExpertLabel for every expert mode.
func Select(o *datafile.Offline, label string) (Selection, error) {
	modes := o.Manifest.Modes
	var chosen []int32
	for i, m := range modes {
		if m.Name == label || label == ExpertLabel && m.Expert {
			chosen = append(chosen, int32(i))
		}
	}
	if len(chosen) == 0 {
		names := make([]string, len(modes))
		for i, m := range modes {
			names[i] = m.Name
		}
		return Selection{}, fmt.Errorf("%w: %q (modes: %s; or %q for the expert)", ErrUnknownMode, label, strings.Join(names, ", "), ExpertLabel)
	}
	sel := Selection{Label: label}
	if len(chosen) == 1 {
		sel.Label = modes[chosen[0]].Name
	}
	for i, m := range o.Withheld.Mode {
		if slices.Contains(chosen, m) {
			sel.Rows = append(sel.Rows, i)
		}
	}
	if len(sel.Rows) == 0 {
		return Selection{}, fmt.Errorf("%w: %q has no transitions", ErrUnknownMode, label)
	}
	return sel, nil
}

// WithoutFalls returns sel without the rows of every episode of o that ends in a fall (a
// terminal transition), and how many episodes it dropped: a clone of the behaviour's successes
// only (filtered behaviour cloning), for a behaviour that falls in part of its episodes. An
// episode runs from a row marked as an episode start to the row before the next. It is an error
// wrapping ErrUnknownMode when nothing is left.
func (sel Selection) WithoutFalls(o *datafile.Offline) (Selection, int, error) {
	d := &o.Data
	fell := make([]bool, d.Len()) // by row: its episode ends in a fall
	dropped := 0
	for start := 0; start < d.Len(); {
		end := start + 1
		for end < d.Len() && !d.EpisodeStart[end] {
			end++
		}
		if slices.Contains(d.Terminal[start:end], true) {
			for i := start; i < end; i++ {
				fell[i] = true
			}
		}
		start = end
	}
	out := Selection{Label: sel.Label}
	for k, i := range sel.Rows {
		if fell[i] {
			if k == 0 || d.EpisodeStart[i] {
				dropped++
			}
			continue
		}
		out.Rows = append(out.Rows, i)
	}
	if len(out.Rows) == 0 {
		return Selection{}, dropped, fmt.Errorf("%w: every episode of %q ends in a fall", ErrUnknownMode, sel.Label)
	}
	return out, dropped, nil
}

// Report describes a fit.
type Report struct {
	Transitions int
	// FinalLoss is the mean negative log-likelihood of the last step.
	FinalLoss float64
	// MeanAbsError is mean |tanh(mean(s)) - a| over the selected
	// transitions: how closely the policy's deterministic action follows
	// the behaviour's.
	MeanAbsError float64
}

// Fit clones the behaviour of the selected rows of d (prepared data; its
// expert part is not used) and returns the policy.
func Fit(ctx context.Context, d *prep.Data, sel Selection, cfg Config, progress io.Writer, quiet bool) (*nn.Conditioned[float32], Report, error) {
	if cfg.Policy.Batch <= 0 || cfg.Steps < 0 || cfg.Policy.LR <= 0 || cfg.Policy.Latent != 0 {
		return nil, Report{}, fmt.Errorf("%w: %+v", ErrConfig, cfg)
	}
	sub, err := subset(d.Offline, sel.Rows)
	if err != nil {
		return nil, Report{}, err
	}
	// The generator is drawn as a DICE trainer seeded with cfg.Seed drew
	// it, so that fits made before the learners were split are reproduced.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xd1ce))
	if _, err := nn.NewMLP[float32](rng, []int{sub.ObsDim, 1}, cfg.Policy.Activation, nn.Identity); err != nil {
		return nil, Report{}, err
	}
	l, err := wbc.New(sub, cfg.Policy, rng)
	if err != nil {
		return nil, Report{}, err
	}
	bar := metrics.NewBar(progress, cfg.Steps, 0, "BC "+sel.Label, quiet)
	rep := Report{Transitions: sub.Len()}
	for step := range cfg.Steps {
		if step%64 == 0 && ctx.Err() != nil {
			bar.Finish()
			return nil, Report{}, ctx.Err()
		}
		rep.FinalLoss = l.Step() // a fresh learner draws uniformly
		bar.Set(step + 1)
	}
	bar.Finish()
	net, err := l.Deployed()
	if err != nil {
		return nil, Report{}, err
	}
	rep.MeanAbsError = meanAbsError(cfg.Policy.Head(net, sub.ActDim), sub)
	return net, rep, nil
}

// subset copies the chosen transitions into a dataset of their own.
func subset(o *dataset.Offline, rows []int) (*dataset.Offline, error) {
	s := &dataset.Offline{ObsDim: o.ObsDim, ActDim: o.ActDim}
	for _, i := range rows {
		if i < 0 || i >= o.Len() {
			return nil, fmt.Errorf("bc: row %d of %d", i, o.Len())
		}
		s.Obs = append(s.Obs, o.Obs[i*o.ObsDim:(i+1)*o.ObsDim]...)
		s.NextObs = append(s.NextObs, o.NextObs[i*o.ObsDim:(i+1)*o.ObsDim]...)
		s.Act = append(s.Act, o.Act[i*o.ActDim:(i+1)*o.ActDim]...)
		s.Terminal = append(s.Terminal, o.Terminal[i])
		s.Timeout = append(s.Timeout, o.Timeout[i])
		s.EpisodeStart = append(s.EpisodeStart, o.EpisodeStart[i])
	}
	return s, s.Validate()
}

func meanAbsError(pi *nn.SquashedGaussian[float32], o *dataset.Offline) float64 {
	const chunk = 4096
	var tape nn.Tape[float32]
	out := make([]float32, chunk*o.ActDim)
	sum := 0.0
	for start := 0; start < o.Len(); start += chunk {
		rows := min(chunk, o.Len()-start)
		pi.Mode(&tape, o.Obs[start*o.ObsDim:(start+rows)*o.ObsDim], rows, out[:rows*o.ActDim])
		for j, a := range out[:rows*o.ActDim] {
			sum += math.Abs(float64(a - o.Act[start*o.ActDim+j]))
		}
	}
	return sum / float64(len(o.Act))
}

// Bank exports the fitted policy: one latent named "<label> fit", tagged
// Tag and the label. Its metadata say what can be said without a
// discriminator: the offline successor features are the mean phi of the
// selected transitions, phi is log(N / n) = KL of the uniform distribution
// over them from the offline data (there is no r_E term), and sigmoid(mu)
// is 0 (no imitation reward was used).
func Bank(d *prep.Data, sel Selection, pi *nn.Conditioned[float32]) (*skills.Bank, error) {
	f := d.FeatureDim
	psi := make([]float64, f)
	for _, i := range sel.Rows {
		for j, p := range d.Phi[i*f : (i+1)*f] {
			psi[j] += float64(p)
		}
	}
	info := skills.LatentInfo{
		Iteration: 0, Name: sel.Label + " fit", SigmoidMu: 0,
		Phi:        math.Log(float64(d.Offline.Len()) / float64(len(sel.Rows))),
		OfflinePsi: make([]float32, f),
		Tags:       []string{Tag, sel.Label},
	}
	for j, p := range psi {
		info.OfflinePsi[j] = float32(p / float64(len(sel.Rows)))
	}
	return export.Bank(d.Contract, Producer, []*nn.Conditioned[float32]{pi}, []export.Latent{{Slot: 0, Z: []float32{0}, Info: info}})
}
