package disc

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/metrics"
)

// Report describes the trained discriminator.
type Report struct {
	Steps int `json:"steps"`
	// TrainExpert ... HeldOutOffline count the states of each split.
	TrainExpert    int `json:"train_expert"`
	TrainOffline   int `json:"train_offline"`
	HeldOutExpert  int `json:"held_out_expert"`
	HeldOutOffline int `json:"held_out_offline"`
	// HeldOutAccuracy is the balanced accuracy on the held-out states: the
	// mean of the fractions of expert states with f > 0 and of offline
	// states with f < 0. Offline data contain expert transitions too, so
	// it stays below 1 even for a perfect discriminator. NaN without a
	// hold-out.
	HeldOutAccuracy        metrics.Num `json:"held_out_accuracy"`
	HeldOutExpertAccuracy  metrics.Num `json:"held_out_expert_accuracy"`
	HeldOutOfflineAccuracy metrics.Num `json:"held_out_offline_accuracy"`
	// LogitMin and LogitMax bound f over the whole offline set, before the
	// reward clip; ClippedFraction is the share of offline states whose
	// |f| exceeds it.
	LogitMin        metrics.Num `json:"logit_min"`
	LogitMax        metrics.Num `json:"logit_max"`
	ClippedFraction metrics.Num `json:"clipped_fraction"`
	// RewardMean is the mean r_E over the offline set.
	RewardMean metrics.Num `json:"reward_mean"`
	// Last* average the final 100 training steps.
	LastBCE      metrics.Num `json:"last_bce"`
	LastPenalty  metrics.Num `json:"last_penalty"`
	LastGradNorm metrics.Num `json:"last_grad_norm"`
}

// Reward is a trained discriminator's imitation reward.
type Reward struct {
	Report Report
	// Params are f's parameters.
	Params []float32
	// R is the clipped r_E of every offline state.
	R []float32
}

// RewardOptions set how TrainReward trains and reports.
type RewardOptions struct {
	// Steps is the number of discriminator steps.
	Steps int
	// HoldOut is the fraction of each set kept out of training to measure
	// the accuracy.
	HoldOut float64
	// Progress receives the progress bar (shown only on a terminal and
	// without Quiet).
	Progress io.Writer
	Quiet    bool
}

// TrainReward trains f on a training split of the expert and offline
// states (rows of dim values; the split is drawn from cfg.Seed), measures
// it on the held-out split and returns the report, f's parameters and the
// clipped reward r_E of every offline state. It is deterministic for a
// given cfg.Seed.
func TrainReward(ctx context.Context, expert, offline []float32, dim int, cfg Config, opt RewardOptions) (*Reward, error) {
	if opt.Steps < 0 || !(opt.HoldOut >= 0 && opt.HoldOut < 1) {
		return nil, fmt.Errorf("%w: %d steps, hold-out %v", ErrConfig, opt.Steps, opt.HoldOut)
	}
	net, err := New(dim, cfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x401d_0ff))
	nExpert, nOffline := len(expert)/dim, len(offline)/dim
	expTrain, expHeld := holdOut(rng, nExpert, opt.HoldOut)
	offTrain, offHeld := holdOut(rng, nOffline, opt.HoldOut)
	rows := func(src []float32, idx []int) []float32 {
		out := make([]float32, 0, len(idx)*dim)
		for _, i := range idx {
			out = append(out, src[i*dim:(i+1)*dim]...)
		}
		return out
	}
	rep := Report{
		Steps:       opt.Steps,
		TrainExpert: len(expTrain), TrainOffline: len(offTrain), HeldOutExpert: len(expHeld), HeldOutOffline: len(offHeld),
	}
	expertX, offlineX := rows(expert, expTrain), rows(offline, offTrain)

	bar := metrics.NewBar(opt.Progress, opt.Steps, 0, "discriminator", opt.Quiet)
	const tail = 100
	var tailSteps, bce, penalty, gradNorm float64
	for step := range opt.Steps {
		if step%64 == 0 && ctx.Err() != nil {
			bar.Finish()
			return nil, ctx.Err()
		}
		st := net.Step(expertX, offlineX)
		if step >= opt.Steps-tail {
			bce += st.BCE
			penalty += st.Penalty
			gradNorm += st.GradNorm
			tailSteps++
		}
		bar.Set(step + 1)
	}
	bar.Finish()
	rep.LastBCE, rep.LastPenalty, rep.LastGradNorm = metrics.Num(bce/tailSteps), metrics.Num(penalty/tailSteps), metrics.Num(gradNorm/tailSteps)

	expAcc := sideAccuracy(net, rows(expert, expHeld), +1)
	offAcc := sideAccuracy(net, rows(offline, offHeld), -1)
	rep.HeldOutExpertAccuracy, rep.HeldOutOfflineAccuracy = metrics.Num(expAcc), metrics.Num(offAcc)
	rep.HeldOutAccuracy = metrics.Num((expAcc + offAcc) / 2)

	n := nOffline
	logits := make([]float32, n)
	net.Logits(offline, logits)
	lo, hi := math.Inf(1), math.Inf(-1)
	clipped := 0
	for _, f := range logits {
		v := float64(f)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("disc: discriminator diverged: logit %v", v)
		}
		lo, hi = min(lo, v), max(hi, v)
		if math.Abs(v) > cfg.RewardClip {
			clipped++
		}
	}
	rep.LogitMin, rep.LogitMax = metrics.Num(lo), metrics.Num(hi)
	rep.ClippedFraction = metrics.Num(float64(clipped) / float64(n))
	reward := make([]float32, n)
	net.Reward(offline, reward)
	sum := 0.0
	for _, r := range reward {
		sum += float64(r)
	}
	rep.RewardMean = metrics.Num(sum / float64(n))
	return &Reward{Report: rep, Params: append([]float32(nil), net.Net().Params()...), R: reward}, nil
}

// sideAccuracy is the fraction of states whose logit has the given sign;
// NaN for no states.
func sideAccuracy(net *Discriminator, states []float32, sign float64) float64 {
	n := len(states) / net.Net().InDim()
	if n == 0 {
		return math.NaN()
	}
	logits := make([]float32, n)
	net.Logits(states, logits)
	right := 0
	for _, f := range logits {
		if sign*float64(f) > 0 {
			right++
		}
	}
	return float64(right) / float64(n)
}

// holdOut splits n row indices into a training and a held-out part of
// about frac*n rows (at least one of each when n >= 2 and frac > 0).
func holdOut(rng *rand.Rand, n int, frac float64) (train, held []int) {
	perm := rng.Perm(n)
	k := int(frac * float64(n))
	if frac > 0 && n >= 2 {
		k = min(max(k, 1), n-1)
	}
	return perm[k:], perm[:k]
}
