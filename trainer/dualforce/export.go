package dualforce

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/export"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/run"
	"github.com/dualforce/dualforce/trainer/skillset"
	"github.com/dualforce/dualforce/trainer/wbc"
)

// BankFromCheckpoint exports the bank of a Dual-Force checkpoint: every
// skill's policy of that iteration and every latent stored up to it, with
// fre (nil: none) as the bank's encoder.
func BankFromCheckpoint(f *checkpoint.File, fre *skills.FRE) (*skills.Bank, error) {
	slots, s, err := fromFile(f)
	if err != nil {
		return nil, err
	}
	return exportBank(f.Contract, slots, s.Latents, fre)
}

// fromFile reads the policies and the loop's state of a Dual-Force checkpoint.
func fromFile(f *checkpoint.File) ([]*nn.Conditioned[float32], State, error) {
	bad := func(err error) error { return fmt.Errorf("%w: %w", checkpoint.ErrCheckpoint, err) }
	if f.Algorithm != Algorithm {
		return nil, State{}, bad(fmt.Errorf("a %s checkpoint, not %s", f.Algorithm, Algorithm))
	}
	var saved run.SavedConfig
	var cfg TrainConfig
	if err := json.Unmarshal(f.Config, &saved); err != nil {
		return nil, State{}, bad(fmt.Errorf("config: %w", err))
	}
	if err := json.Unmarshal(saved.Config, &cfg); err != nil {
		return nil, State{}, bad(fmt.Errorf("config: %w", err))
	}
	// Every skill has arrays of its own: a damaged count cannot ask for more
	// networks than the file holds arrays.
	if cfg.Skills < 1 || cfg.Skills > len(f.Float32) {
		return nil, State{}, bad(fmt.Errorf("%d skills", cfg.Skills))
	}
	slots := make([]*nn.Conditioned[float32], cfg.Skills)
	for i := range slots {
		params, err := f.Float32Array(skillset.DeployedPolicy(i, cfg.Policy.Average > 0), -1)
		if err != nil {
			return nil, State{}, err
		}
		if slots[i], err = wbc.Rebuild(f.Contract.Layout.Dim(), skills.NumJoints, cfg.Policy, params); err != nil {
			return nil, State{}, bad(fmt.Errorf("skill %d: %w", i, err))
		}
	}
	s, err := StateFromArrays(f.Float32, f.Float64, f.Iteration, cfg.Skills, cfg.Policy.Latent, f.Contract.Features.Dim(f.Contract.Layout))
	if err != nil {
		return nil, State{}, bad(err)
	}
	return slots, s, nil
}

// exportBank is the bank of the given policies (one slot per skill) and
// latents, with fre as its encoder when set.
func exportBank(c skills.Contract, slots []*nn.Conditioned[float32], lats []Latent, fre *skills.FRE) (*skills.Bank, error) {
	latents := make([]export.Latent, len(lats))
	for k, l := range lats {
		latents[k] = export.Latent{Slot: l.Skill, Z: l.Z, Info: skills.LatentInfo{
			Iteration: l.Iteration, SigmoidMu: l.Sigma, Phi: l.Constraint, OfflinePsi: l.Psi,
		}}
	}
	b, err := export.Bank(c, Producer, slots, latents)
	if err != nil || fre == nil {
		return b, err
	}
	b.FRE = fre
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("dualforce: the bank's FRE encoder: %w", err)
	}
	return b, nil
}

// Judge adapts j to the training harness: it judges a checkpoint by the
// bank of every skill's policy run on its latest latent (the code of its
// reward at that iteration), one latent per skill in skill order, so that
// j's parts (eval.Checker: each latent's mean return) are the skills'.
//
// Why judge a Dual-Force run: its policies, like the SMODICE-expert's, are
// not monotone in the iterations. The paper-scale default run without
// judging ended with one skill standing at every latent.
func Judge(j run.BankJudge) run.Judge { return checkpointJudge{j} }

type checkpointJudge struct{ run.BankJudge }

func (j checkpointJudge) Judge(ctx context.Context, f *checkpoint.File) (run.Verdict, error) {
	slots, s, err := fromFile(f)
	if err != nil {
		return run.Verdict{}, err
	}
	if len(s.Latents) < len(slots) {
		return run.Verdict{}, fmt.Errorf("dualforce: iteration %d has no latents to judge", f.Iteration)
	}
	b, err := exportBank(f.Contract, slots, s.Latents[len(s.Latents)-len(slots):], nil)
	if err != nil {
		return run.Verdict{}, err
	}
	return j.JudgeBank(ctx, b)
}

// selectedBank is the bank of each skill at its best-judged checkpoint in
// dir: its policy of that iteration and its latents met up to it. A skill
// no check scored (nothing judged, or only NaN) keeps its last iteration's.
func (t *trainer) selectedBank(dir string) (*skills.Bank, error) {
	slots := make([]*nn.Conditioned[float32], len(t.policies))
	var lats []Latent
	for i, p := range t.policies {
		f, _, err := run.BestPartCheckpoint(dir, i)
		if errors.Is(err, run.ErrNoChecks) {
			if slots[i], err = p.Deployed(); err != nil {
				return nil, err
			}
			lats = appendSkill(lats, t.loop.Latents(), i)
			continue
		}
		if err != nil {
			return nil, err
		}
		nets, s, err := fromFile(f)
		if err != nil {
			return nil, err
		}
		if len(nets) != len(slots) {
			return nil, fmt.Errorf("%w: %s has %d skills, the run %d", ErrResume, run.BestPartFile(i), len(nets), len(slots))
		}
		slots[i], lats = nets[i], appendSkill(lats, s.Latents, i)
	}
	// The order of a run's bank: by iteration, then skill.
	slices.SortStableFunc(lats, func(a, b Latent) int { return cmp.Compare(a.Iteration, b.Iteration) })
	return exportBank(t.d.Contract, slots, lats, t.bankFRE)
}

// appendSkill appends skill i's latents of src to dst.
func appendSkill(dst, src []Latent, i int) []Latent {
	for _, l := range src {
		if l.Skill == i {
			dst = append(dst, l)
		}
	}
	return dst
}
