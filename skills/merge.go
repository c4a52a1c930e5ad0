package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// ErrIncompatible reports banks that cannot be merged into one: their skills were trained for
// different observations, actions or encoders.
var ErrIncompatible = errors.New("skills: banks not compatible")

// Merge returns one bank holding every slot and latent of banks, in order: bank j's slots follow
// those of the banks before it, and its latents point at them. The banks must share their
// contract (the same layout, normaliser, feature projection, gains and rates: trained on one
// data set), latent width and policy head (single Gaussians, or mixtures of as many
// components), and carry the same FRE encoder or none; the merged bank carries it. What an
// evaluation measured (returns, online successor features, filter, goal rates) is dropped: each
// bank was judged against its own filter and rollouts, so the merged bank is evaluated afresh
// (which also replaces the measured tags; the others are kept). A latent name that another
// bank also uses gets the bank's label prepended ("label/name"); labels (one per bank, e.g.
// the file names) must then differ. The result is validated.
func Merge(producer string, labels []string, banks ...*Bank) (*Bank, error) {
	if len(banks) < 2 {
		return nil, fmt.Errorf("%w: merging %d banks, want 2 or more", ErrIncompatible, len(banks))
	}
	if len(labels) != len(banks) {
		return nil, fmt.Errorf("skills: %d labels for %d banks", len(labels), len(banks))
	}
	first := banks[0]
	contract, err := json.Marshal(&first.Contract)
	if err != nil {
		return nil, fmt.Errorf("skills: contract of bank %q: %w", labels[0], err)
	}
	merged := &Bank{Producer: producer, Contract: first.Contract, LatentDim: first.LatentDim, Components: first.Components, FRE: first.FRE}
	uses := make(map[string]int)
	for _, b := range banks {
		for _, l := range b.Latents {
			if l.Info.Name != "" {
				uses[l.Info.Name]++
			}
		}
	}
	for j, b := range banks {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("skills: bank %q: %w", labels[j], err)
		}
		if j > 0 {
			if err := compatible(first, b, contract); err != nil {
				return nil, fmt.Errorf("%w: %q and %q: %w", ErrIncompatible, labels[0], labels[j], err)
			}
		}
		base := len(merged.Slots)
		merged.Slots = append(merged.Slots, b.Slots...)
		for _, l := range b.Latents {
			info := l.Info
			info.Skill += base
			info.OnlineReturn, info.OnlinePsi, info.PassedFilter, info.GoalRate = nil, nil, nil, nil
			if uses[info.Name] > 1 {
				info.Name = labels[j] + "/" + info.Name
			}
			merged.Latents = append(merged.Latents, Latent{Info: info, Z: l.Z})
		}
	}
	if err := merged.Validate(); err != nil {
		return nil, fmt.Errorf("skills: merged bank: %w", err)
	}
	return merged, nil
}

// compatible reports how b differs from first in what a merged bank must share; contract is
// first's contract as JSON, the form a bank stores it in.
func compatible(first, b *Bank, contract []byte) error {
	c, err := json.Marshal(&b.Contract)
	if err != nil {
		return err
	}
	switch {
	case !bytes.Equal(contract, c):
		return errors.New("different contracts (layout, normaliser, features, gains or rates): trained on different data")
	case b.LatentDim != first.LatentDim:
		return fmt.Errorf("latents of %d and %d values", first.LatentDim, b.LatentDim)
	case max(b.Components, 1) != max(first.Components, 1): // 0 and 1 both mean a single Gaussian
		return fmt.Errorf("policy heads of %s and %s", headName(first.Components), headName(b.Components))
	case (first.FRE == nil) != (b.FRE == nil):
		return errors.New("one carries an FRE encoder, the other none")
	case first.FRE != nil && !reflect.DeepEqual(first.FRE, b.FRE):
		return errors.New("different FRE encoders")
	}
	return nil
}

// headName names the policy head of a bank of the given mixture components.
func headName(components int) string {
	if components <= 1 {
		return "a single Gaussian"
	}
	return fmt.Sprintf("a %d-component Gaussian mixture", components)
}

// KeepSlots returns a copy of b holding only the given slots, in that order, and the latents
// of those slots pointing at them (the others are dropped): the skills of a run worth keeping,
// for a merged bank that must stay small. slots must name each slot of b at most once.
func (b *Bank) KeepSlots(slots []int) (*Bank, error) {
	if len(slots) == 0 {
		return nil, errors.New("skills: keeping no slot")
	}
	at := make([]int, len(b.Slots)) // new index + 1 of each old slot; 0: dropped
	for i, s := range slots {
		switch {
		case s < 0 || s >= len(b.Slots):
			return nil, fmt.Errorf("skills: slot %d: the bank has slots 0-%d", s, len(b.Slots)-1)
		case at[s] != 0:
			return nil, fmt.Errorf("skills: slot %d named twice", s)
		}
		at[s] = i + 1
	}
	kept := *b
	kept.Slots = make([]Slot, len(slots))
	for i, s := range slots {
		kept.Slots[i] = b.Slots[s]
	}
	kept.Latents = nil
	for _, l := range b.Latents {
		if n := at[l.Info.Skill]; n != 0 {
			l.Info.Skill = n - 1
			kept.Latents = append(kept.Latents, l)
		}
	}
	if err := kept.Validate(); err != nil {
		return nil, fmt.Errorf("skills: bank of slots %v: %w", slots, err)
	}
	return &kept, nil
}
