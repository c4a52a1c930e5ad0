package mqtt

import "github.com/dualforce/dualforce/runtime/corebus"

// What the adapter needs from the runtime core. corebus.Ring and
// corebus.Latest provide non-blocking, allocation-free implementations the
// core can forward to.

// CommandSink takes validated commands; the core drains them at its next
// policy tick. OfferCommand must never block: it reports false when the
// queue is full. It is called from several goroutines. (runtime/core's
// FRE-encodes a recall outside the bank's features before queueing it: tens
// of milliseconds of the caller's time, never the control loop's. The adapter
// offers recalls from a goroutine of their own so that the commands behind a
// recall, an e-stop above all, are not held up by its encoding.)
type CommandSink interface {
	OfferCommand(corebus.Command) bool
}

// SkillCatalogue gives the loaded bank's skills, or nil before any bank is
// loaded. It is called from several goroutines; the catalogue returned is
// never modified afterwards.
type SkillCatalogue interface {
	Catalogue() *corebus.Catalogue
}

// StateSource gives the core's latest state snapshot. LoadState reports
// false until the core has stored one. Only the adapter's run loop calls it.
type StateSource interface {
	LoadState(dst *corebus.Snapshot) bool
}

// EventSource gives the core's events in order. Only the adapter's run loop
// calls it. EventsDropped counts the events the core could not queue.
type EventSource interface {
	PollEvent(dst *corebus.Event) bool
	EventsDropped() uint64
}

// Core is everything the adapter talks to.
type Core interface {
	CommandSink
	SkillCatalogue
	StateSource
	EventSource
}
