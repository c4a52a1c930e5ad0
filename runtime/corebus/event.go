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
	// EventRouteBlocked: the running skill From's route is blocked (Switch says what blocked
	// it) but no latent is measured on a clear route, so it keeps running (To is From);
	// reported once per set of blocked routes.
	EventRouteBlocked
)

var eventNames = [...]string{"none", "command_done", "fault", "fault_cleared", "skill_switch", "mode_change", "bank_load", "route_blocked"}

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
	// Switch explains a switch the core made on its own (EventSkillSwitch with Switch.Trigger
	// set), or what blocked the running skill with nowhere to go (EventRouteBlocked).
	Switch SwitchReport
	// Recalled is the outcome of a recall command (EventCommandDone of KindRecall, and the
	// EventSkillSwitch it caused).
	Recalled RecallResult
}

// SwitchTrigger says what made the core switch skills by itself.
type SwitchTrigger uint8

// Switch triggers; the zero value marks a switch an operator asked for.
const (
	TriggerNone       SwitchTrigger = iota
	TriggerObstacle                 // the height map shows a wall on the running skill's route
	TriggerNoProgress               // no progress towards the goal for the configured time
)

var triggerNames = [...]string{"operator", "obstacle", "no_progress"}

func (t SwitchTrigger) String() string {
	if int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return "unknown"
}

// Routes is a set of the routes a navigation skill can take past an obstacle.
type Routes uint8

// Routes a skill is measured to take.
const (
	RouteLeft  Routes = 1 << iota // round the obstacle on the left
	RouteRight                    // round it on the right
	RouteOver                     // straight over it
)

// Names of the routes, in bit order.
var routeNames = [...]string{"left", "right", "over"}

// Names lists the routes in r, for reports (it allocates: not for the control path).
func (r Routes) Names() []string {
	var out []string
	for i, n := range routeNames {
		if r&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// MaxReportedCandidates bounds the candidates a SwitchReport lists.
const MaxReportedCandidates = 8

// Candidate is one latent the core weighed for a switch.
type Candidate struct {
	Index int32 // bank latent
	// Success is the measured success rate in SwitchReport.World, NaN when not measured:
	// after a switch there (AfterSwitch) where evaluation measured that, else from the start.
	Success     float32
	AfterSwitch bool
	// Distance is the successor-feature distance from the stuck skill, NaN when either lacks SFs.
	Distance float32
}

// SwitchReport says why the core switched: what was blocked, which latents it weighed (the
// best ones first, at most MaxReportedCandidates of Considered), and why the chosen one.
type SwitchReport struct {
	Trigger    SwitchTrigger
	Blocked    Routes // routes the height map or the stall ruled out
	World      string // the fenced evaluation world matching Blocked, whose success rates ranked
	Considered int    // latents that passed the filter and whose route is clear (and a running skill kept: listed first)
	Candidates [MaxReportedCandidates]Candidate
	Chosen     string // why the first candidate won
}

// Listed returns the reported candidates.
func (r *SwitchReport) Listed() []Candidate {
	return r.Candidates[:min(r.Considered, MaxReportedCandidates)]
}

// RecallResult is the skill a recall chose and how.
type RecallResult struct {
	Valid bool // the event is about a recall
	Index int  // bank latent, -1 when nothing was chosen
	// ByFeatures: the reward was linear in the bank's features and Score = <u, psi_online>;
	// otherwise it was FRE-encoded and Distance is its distance to the chosen latent.
	ByFeatures bool
	Score      float64
	Distance   float64
}
