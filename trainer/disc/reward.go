package smodice

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dualforce/dualforce/trainer/disc"
	"github.com/dualforce/dualforce/trainer/metrics"
)

// DiscReport describes the trained discriminator.
type DiscReport struct {
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

// trainDiscriminator trains f on the training split, measures it on the
// held-out split and returns the report, f's parameters and the clipped
// reward r_E of every offline state.
func (d *Data) trainDiscriminator(ctx context.Context, cfg Config, opt Options) (DiscReport, []float32, []float32, error) {
	dim := d.Offline.ObsDim
	net, err := disc.New(dim, cfg.Disc)
	if err != nil {
		return DiscReport{}, nil, nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x401d_0ff))
	nExpert := len(d.Expert) / dim
	expTrain, expHeld := holdOut(rng, nExpert, cfg.HoldOut)
	offTrain, offHeld := holdOut(rng, d.Offline.Len(), cfg.HoldOut)
	rows := func(src []float32, idx []int) []float32 {
		out := make([]float32, 0, len(idx)*dim)
		for _, i := range idx {
			out = append(out, src[i*dim:(i+1)*dim]...)
		}
		return out
	}
	rep := DiscReport{
		Steps:       cfg.DiscSteps,
		TrainExpert: len(expTrain), TrainOffline: len(offTrain), HeldOutExpert: len(expHeld), HeldOutOffline: len(offHeld),
	}
	expertX, offlineX := rows(d.Expert, expTrain), rows(d.Offline.Obs, offTrain)

	bar := metrics.NewBar(opt.Progress, cfg.DiscSteps, 0, "discriminator", opt.Quiet)
	const tail = 100
	var tailSteps, bce, penalty, gradNorm float64
	for step := range cfg.DiscSteps {
		if step%64 == 0 && ctx.Err() != nil {
			bar.Finish()
			return DiscReport{}, nil, nil, ctx.Err()
		}
		st := net.Step(expertX, offlineX)
		if step >= cfg.DiscSteps-tail {
			bce += st.BCE
			penalty += st.Penalty
			gradNorm += st.GradNorm
			tailSteps++
		}
		bar.Set(step + 1)
	}
	bar.Finish()
	rep.LastBCE, rep.LastPenalty, rep.LastGradNorm = metrics.Num(bce/tailSteps), metrics.Num(penalty/tailSteps), metrics.Num(gradNorm/tailSteps)

	expAcc := sideAccuracy(net, rows(d.Expert, expHeld), +1)
	offAcc := sideAccuracy(net, rows(d.Offline.Obs, offHeld), -1)
	rep.HeldOutExpertAccuracy, rep.HeldOutOfflineAccuracy = metrics.Num(expAcc), metrics.Num(offAcc)
	rep.HeldOutAccuracy = metrics.Num((expAcc + offAcc) / 2)

	n := d.Offline.Len()
	logits := make([]float32, n)
	net.Logits(d.Offline.Obs, logits)
	lo, hi := math.Inf(1), math.Inf(-1)
	clipped := 0
	for _, f := range logits {
		v := float64(f)
		if nonFinite(v) {
			return DiscReport{}, nil, nil, fmt.Errorf("smodice: discriminator diverged: logit %v", v)
		}
		lo, hi = min(lo, v), max(hi, v)
		if math.Abs(v) > cfg.Disc.RewardClip {
			clipped++
		}
	}
	rep.LogitMin, rep.LogitMax = metrics.Num(lo), metrics.Num(hi)
	rep.ClippedFraction = metrics.Num(float64(clipped) / float64(n))
	reward := make([]float32, n)
	net.Reward(d.Offline.Obs, reward)
	sum := 0.0
	for _, r := range reward {
		sum += float64(r)
	}
	rep.RewardMean = metrics.Num(sum / float64(n))
	return rep, append([]float32(nil), net.Net().Params()...), reward, nil
}

// sideAccuracy is the fraction of states whose logit has the given sign;
// NaN for no states.
func sideAccuracy(net *disc.Discriminator, states []float32, sign float64) float64 {
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
