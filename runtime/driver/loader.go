package driver

import (
	"context"

	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// BankLoader reads and prepares banks off the control thread for the core's bank-load commands.
type BankLoader struct {
	requests chan corebus.Command
}

// NewBankLoader returns a loader that holds at most one pending request.
func NewBankLoader() *BankLoader { return &BankLoader{requests: make(chan corebus.Command, 1)} }

// Request is core.Config.RequestBank: it never blocks and refuses while a load is pending.
func (l *BankLoader) Request(cmd corebus.Command) bool {
	select {
	case l.requests <- cmd:
		return true
	default:
		return false
	}
}

// Run serves requests until ctx ends. firstGeneration numbers the first bank it loads; each
// later one gets the next number.
func (l *BankLoader) Run(ctx context.Context, c *core.Core, firstGeneration uint64) {
	gen := firstGeneration
	for {
		select {
		case <-ctx.Done():
			return
		case cmd := <-l.requests:
			ref := corebus.CommandRef{Kind: cmd.Kind, ID: cmd.ID, ReplyTo: cmd.ReplyTo}
			bank, err := skills.ReadBank(cmd.BankPath)
			var loaded *core.Loaded
			if err == nil {
				loaded, err = core.Load(bank, cmd.BankPath, gen)
			}
			if err == nil {
				gen++
			}
			c.OfferBank(loaded, cmd.BankPath, err, ref)
		}
	}
}
