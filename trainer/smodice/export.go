package smodice

import (
	"github.com/dualforce/dualforce/skills"
	"github.com/dualforce/dualforce/trainer/export"
	"github.com/dualforce/dualforce/trainer/nn"
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
