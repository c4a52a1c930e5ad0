package core

import (
	"math"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// Reasons a recall is refused. Constant, so that refusing allocates nothing.
const (
	refuseRecallElement  = "the reward names an element the bank's observation does not have"
	refuseRecallNoPsi    = "no latent that passed the filter has measured successor features"
	refuseRecallNoFRE    = "bank has no FRE encoder: a reward outside the bank's features cannot be encoded"
	refuseRecallEncode   = "the FRE encoder failed on this reward"
	refuseRecallNotNear  = "no stored skill is near this reward"
	refuseRecallNoPassed = "no latent of the bank passed the filter"
	refuseRecallAlike    = "every stored skill serves this reward alike: none is measured to do it more"
	reasonRecall         = "operator recall by reward"
)

// alikeTolerance is the relative spread of expected rewards below which no stored skill serves
// a reward better than another (float32 successor features carry about 7 digits).
const alikeTolerance = 1e-5

// encodeRecall FRE-encodes a recall's reward against the running bank when the reward lies
// outside the bank's features and the bank has an encoder. It runs in the goroutine that offers
// the command (allocating there is fine); applyRecall checks what it left.
func (c *Core) encodeRecall(r *corebus.Recall) {
	b := c.live.Load()
	r.Generation = b.catalogue.Generation
	if b.encoder == nil {
		return
	}
	inFeatures := true
	for _, t := range r.Reward {
		off, err := skills.ElementOffset(b.Bank.Contract.Layout, t.Element)
		if err != nil {
			return // applyRecall names the element problem
		}
		_, _, ok := b.features.Feature(off)
		inFeatures = inFeatures && ok
	}
	if inFeatures {
		return
	}
	weights := make([]float32, b.builder.Dim())
	for _, t := range r.Reward {
		off, _ := skills.ElementOffset(b.Bank.Contract.Layout, t.Element)
		weights[off] += float32(t.Weight)
	}
	z := make([]float32, b.Bank.LatentDim)
	c.encoding.Lock()
	err := b.encoder.EncodeLinearReward(weights, z)
	c.encoding.Unlock()
	if err == nil {
		r.Latent = z
	}
}

// applyRecall runs the stored skill that best serves a reward linear in named observation
// elements. When every element is one of the bank's features phi, the reward is <u, phi> plus a
// constant and successor features make its expected value exact: the passing latent with the
// largest <u, psi_online> wins. Otherwise the reward's FRE encoding (made when the command was
// offered) picks the nearest passing latent if it lies within the distance allowed.
func (c *Core) applyRecall(now time.Duration, r *corebus.Recall) (bool, string) {
	b := c.bank
	clear(b.featureWeights)
	inFeatures := true
	for _, t := range r.Reward {
		off, err := skills.ElementOffset(b.Bank.Contract.Layout, t.Element)
		if err != nil {
			return false, refuseRecallElement
		}
		if k, scale, ok := b.features.Feature(off); ok {
			b.featureWeights[k] += float32(t.Weight) * scale
		} else {
			inFeatures = false
		}
	}
	c.recalled.ByFeatures = inFeatures
	m := b.measured
	best := -1
	if inFeatures {
		bestScore, worstScore := math.Inf(-1), math.Inf(1)
		for i := range b.Bank.Latents {
			psi := m.OnlinePsi(i)
			if !m.Passed(i) || len(psi) != len(b.featureWeights) {
				continue
			}
			var score float64
			for k, u := range b.featureWeights {
				score += float64(u) * float64(psi[k])
			}
			worstScore = min(worstScore, score)
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			return false, refuseRecallNoPsi
		}
		c.recalled.Score = bestScore
		if bestScore-worstScore <= alikeTolerance*(1+math.Abs(bestScore)) {
			return false, refuseRecallAlike
		}
		c.recalled.Index = best
	} else {
		switch {
		case r.Generation != b.catalogue.Generation:
			return false, refuseStaleBank
		case b.encoder == nil:
			return false, refuseRecallNoFRE
		case len(r.Latent) != b.Bank.LatentDim:
			return false, refuseRecallEncode
		}
		bestD := math.Inf(1)
		for i := range b.Bank.Latents {
			if d := distance(b.Bank.Latents[i].Z, r.Latent); m.Passed(i) && d < bestD {
				best, bestD = i, d
			}
		}
		if best < 0 {
			return false, refuseRecallNoPassed
		}
		c.recalled.Distance = bestD
		limit := r.MaxDistance
		if limit == 0 {
			limit = c.cfg.RecallMaxDistance
		}
		if bestD > limit {
			return false, refuseRecallNotNear
		}
		c.recalled.Index = best
	}
	if c.active == (corebus.ActiveSkill{Source: corebus.SkillBank, Index: best}) {
		return true, "" // the skill that serves the reward best already runs
	}
	from := c.active
	if err := c.selectLatent(best); err != nil {
		c.recalled.Index = -1
		return false, refuseNoSkill
	}
	c.switched(now, from, reasonRecall)
	return true, ""
}
