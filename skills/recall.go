package skills

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Skill is a recalled skill: run slot Slot's policy with latent Z.
type Skill struct {
	Index int         // position in Bank.Latents
	Slot  int         // skill slot i (= Info.Skill)
	Info  *LatentInfo // the latent's metadata (shared with the bank)
	Z     []float32   // the latent (shared with the bank: do not modify)
	Net   *MLP        // the slot's policy network (shared with the bank)
}

// ErrNoSkill reports a recall that matches no latent.
var ErrNoSkill = errors.New("skills: no such skill")

func (b *Bank) skill(i int) Skill {
	l := &b.Latents[i]
	return Skill{Index: i, Slot: l.Info.Skill, Info: &l.Info, Z: l.Z, Net: &b.Slots[l.Info.Skill].Policy}
}

// ByIndex recalls latent i.
func (b *Bank) ByIndex(i int) (Skill, error) {
	if i < 0 || i >= len(b.Latents) {
		return Skill{}, fmt.Errorf("%w: index %d of %d", ErrNoSkill, i, len(b.Latents))
	}
	return b.skill(i), nil
}

// ByName recalls the latent labelled name.
func (b *Bank) ByName(name string) (Skill, error) {
	for i := range b.Latents {
		if b.Latents[i].Info.Name == name {
			return b.skill(i), nil
		}
	}
	return Skill{}, fmt.Errorf("%w: name %q", ErrNoSkill, name)
}

// ByTags returns every latent carrying all the given tags, in bank order.
func (b *Bank) ByTags(tags ...string) []Skill {
	var out []Skill
	for i := range b.Latents {
		have := b.Latents[i].Info.Tags
		if !slices.ContainsFunc(tags, func(t string) bool { return !slices.Contains(have, t) }) {
			out = append(out, b.skill(i))
		}
	}
	return out
}

// Nearest recalls the latent closest to z in Euclidean distance (the first
// one on ties) and returns that distance.
func (b *Bank) Nearest(z []float32) (Skill, float64, error) {
	if len(z) != b.LatentDim {
		return Skill{}, 0, fmt.Errorf("%w: query has %d values, latents have %d", ErrDimMismatch, len(z), b.LatentDim)
	}
	best, bestD := -1, math.Inf(1)
	for i := range b.Latents {
		var d float64
		for k, v := range b.Latents[i].Z {
			e := float64(v) - float64(z[k])
			d += e * e
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return Skill{}, 0, fmt.Errorf("%w: no latent at a finite distance", ErrNoSkill)
	}
	return b.skill(best), math.Sqrt(bestD), nil
}

// NewPolicies prepares one Policy per slot, so that switching skills at run
// time is SetLatent on an existing Policy and never allocates:
//
//	ps, _ := bank.NewPolicies()
//	s, _ := bank.ByName("scripted-trot fit")
//	p := ps[s.Slot]
//	p.SetLatent(s.Z)
func (b *Bank) NewPolicies() ([]*Policy, error) {
	ps := make([]*Policy, len(b.Slots))
	for i := range b.Slots {
		p, err := NewPolicy(b.Slots[i].Policy, b.Contract.Layout.Dim(), b.LatentDim, NumJoints)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", i, err)
		}
		ps[i] = p
	}
	return ps, nil
}
