package corebus

import "time"

// EventKind says what happened.
type EventKind uint8

// Event kinds the core reports.
const (
	EventNone EventKind = iota
	// EventCommandDone reports the outcome of applying Command (ok or not,
	// with Reason); the adapter turns it into the reply and, on failure, a
	// rejection event.
	EventCommandDone
	EventFault        // Fault became active; Reason says why
	EventFaultCleared // Fault is no longer active
	EventSkillSwitch  // From -> To, Reason says why (operator, fault, dead-man, ...)
	EventModeChange   // the mode became Mode; Reason says why
	EventBankLoad     // loading BankPath finished: OK, or not with Reason
)

var eventNames = [...]string{"none", "command_done", "fault", "fault_cleared", "skill_switch", "mode_change", "bank_load"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// CommandRef identifies the command an EventCommandDone answers.
type CommandRef struct {
	Kind    Kind
	ID      string
	ReplyTo string
}

// Event is something the core reports. Only the fields of its Kind are set.
// On the control path Reason and Fault must be constant strings so that
// building an Event allocates nothing.
type Event struct {
	Kind     EventKind
	At       time.Time // zero: the adapter stamps the time it publishes
	OK       bool
	Reason   string
	Command  CommandRef
	Fault    string
	From, To ActiveSkill
	Mode     Mode
	BankPath string
}
