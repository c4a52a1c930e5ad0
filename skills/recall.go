package skills

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
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

// Best recalls the latent a runtime starts with when the operator names none: the first of
// Ranked when an evaluation measured it and did not filter it out (in a navigation bank the
// most often at the goal, else the highest online return, the first on ties); in a bank nobody
// evaluated, the last latent of slot 0 (the latest skill that slot was trained under; a
// one-latent bank's only latent).
func (b *Bank) Best() (Skill, error) {
	if order := b.Ranked(); len(order) > 0 && rankGroup(b.Latents[order[0]].Info) == 0 {
		return b.skill(order[0]), nil
	}
	best := -1
	for i := range b.Latents {
		if b.Latents[i].Info.Skill == 0 {
			best = i
		}
	}
	if best < 0 {
		return Skill{}, fmt.Errorf("%w: the bank has no latent of slot 0", ErrNoSkill)
	}
	return b.skill(best), nil
}

// Ranked orders the latents' indices by what evaluation measured: those measured (online
// return recorded) and not filtered out first, then those that failed the filter, then the
// unmeasured in bank order. Within the first two groups, a bank with goal rates (navigation)
// ranks by the mean goal rate over every world the bank has rates from the start for (a world
// a latent was not measured in counts as 0; rates after a switch, AfterSwitchWorld, are not
// counted: a start is not a switch), because reaching the goal is the task and the return only
// shapes it; then, and in a bank without goal rates, by the highest return. Ties keep bank
// order.
func (b *Bank) Ranked() []int {
	order := make([]int, len(b.Latents))
	goal := make([]float64, len(b.Latents))
	worlds := slices.DeleteFunc(b.goalRateWorlds(), IsAfterSwitch)
	for i := range order {
		order[i] = i
		for _, w := range worlds {
			goal[i] += float64(b.Latents[i].Info.GoalRate[w]) / float64(len(worlds))
		}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, c := b.Latents[i].Info, b.Latents[j].Info
		if g := cmp.Compare(rankGroup(a), rankGroup(c)); g != 0 || a.OnlineReturn == nil {
			return g
		}
		if g := cmp.Compare(goal[j], goal[i]); g != 0 {
			return g
		}
		return cmp.Compare(*c.OnlineReturn, *a.OnlineReturn)
	})
	return order
}

// rankGroup is a latent's group in Ranked: 0 measured and not filtered out, 1 filtered out,
// 2 unmeasured.
func rankGroup(in LatentInfo) int {
	switch {
	case in.OnlineReturn == nil:
		return 2
	case in.PassedFilter != nil && !*in.PassedFilter:
		return 1
	}
	return 0
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
		p, err := NewPolicy(b.Slots[i].Policy, b.Contract.Layout.Dim(), b.LatentDim, NumJoints, b.Components)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", i, err)
		}
		ps[i] = p
	}
	return ps, nil
}

// ErrUnknownElement reports an observation element name that the layout does not have.
var ErrUnknownElement = errors.New("skills: no such observation element")

// axisNames name the elements of the 3-vector fields.
var axisNames = [3]string{"x", "y", "z"}

// ElementOffset resolves the name of one element of layout l's observation to its offset. An
// element is named by its field: "remaining_time" (a 1-element field), "field[k]" (any field),
// "field.x", ".y", ".z" (3-element fields: base_lin_vel, base_ang_vel, projected_gravity,
// command), "field.FL_KFE" (the per-joint fields, by JointNames). It never allocates, so the
// runtime resolves operator rewards on its control thread; errors are ErrUnknownElement.
func ElementOffset(l Layout, name string) (int, error) {
	field, sub := name, ""
	index := -1
	if i := strings.IndexAny(name, ".["); i >= 0 {
		field, sub = name[:i], name[i:]
	}
	f, ok := l.Field(field)
	switch {
	case !ok:
		return 0, ErrUnknownElement
	case sub == "":
		if f.Dim == 1 {
			index = 0
		}
	case sub[0] == '[' && len(sub) > 2 && sub[len(sub)-1] == ']':
		index = parseIndex(sub[1 : len(sub)-1])
	case sub[0] == '.' && f.Dim == 3:
		index = slices.Index(axisNames[:], sub[1:])
	case sub[0] == '.' && f.Dim == NumJoints:
		index = slices.Index(JointNames[:], sub[1:])
	}
	if index < 0 || index >= f.Dim {
		return 0, ErrUnknownElement
	}
	return f.Offset + index, nil
}

// parseIndex reads a small decimal index without allocating; -1 when s is not one.
func parseIndex(s string) int {
	if len(s) == 0 || len(s) > 4 {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		n = 10*n + int(s[i]-'0')
	}
	return n
}

// Feature finds the observation element at obsOffset among the features phi: its index k in
// phi and the scale of its standardisation, so that a reward w * obs[obsOffset] is
// (w * scale) * phi[k] plus a constant. ok is false when phi does not project that element.
func (p *Projector) Feature(obsOffset int) (k int, scale float32, ok bool) {
	for _, s := range p.spans {
		if obsOffset >= s[0] && obsOffset < s[0]+s[1] {
			k += obsOffset - s[0]
			return k, 1 / p.norm.invStd[k], true
		}
		k += s[1]
	}
	return 0, 0, false
}
