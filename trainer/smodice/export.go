package smodice

import (
	"context"

	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/checkpoint"
	"github.com/dualforce/dualforce/trainer/export"
	"github.com/dualforce/dualforce/trainer/nn"
	"github.com/dualforce/dualforce/trainer/run"
)

// ExpertLatentName names the SMODICE-expert latent in exported banks.
const ExpertLatentName = "smodice-expert"

// Producer is recorded in banks exported by this package.
const Producer = "dualforce train smodice"

// Bank exports the checkpoint's policy as a one-slot, one-latent bank named
// ExpertLatentName (latent width 1, z = [0]: see package export).
func (ck *Checkpoint) Bank() (*skills.Bank, error) {
	net, _, err := ck.Policy()
	if err != nil {
		return nil, err
	}
	info := skills.LatentInfo{
		Iteration: ck.Iteration, Name: ExpertLatentName,
		// R = r_E alone: the imitation weight of Dual-Force's reward is 1.
		SigmoidMu:  1,
		Phi:        ck.Estimate.Constraint,
		OfflinePsi: ck.Estimate.Psi,
		Tags:       []string{"smodice", "expert"},
	}
	return export.Bank(ck.Contract, Producer, []*nn.Conditioned[float32]{net}, []export.Latent{{Slot: 0, Z: []float32{0}, Info: info}})
}

// Judge adapts j to the training harness: it judges a checkpoint by the bank Bank exports.
func Judge(j run.BankJudge) run.Judge { return checkpointJudge{j} }

type checkpointJudge struct{ run.BankJudge }

func (j checkpointJudge) Judge(ctx context.Context, f *checkpoint.File) (run.Verdict, error) {
	ck, err := FromFile(f)
	if err != nil {
		return run.Verdict{}, err
	}
	b, err := ck.Bank()
	if err != nil {
		return run.Verdict{}, err
	}
	return j.JudgeBank(ctx, b)
}
