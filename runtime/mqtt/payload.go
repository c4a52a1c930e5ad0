package mqtt

import (
	"encoding/json"
	"math"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// Connection states published retained on TopicConnection, as JSON strings.
const (
	ConnectionOnline  = `"online"`
	ConnectionLost    = `"lost"` // the broker's last will for the robot
	ConnectionOffline = `"offline"`
)

// Number is a float64 that encodes NaN and infinities as null: one bad
// estimate must not stop all telemetry (encoding/json refuses them).
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

func numbers[T ~float64](dst []Number, src []T) []Number {
	for i, v := range src {
		dst[i] = Number(v)
	}
	return dst
}

// Reply answers a command that carried reply_to.
type Reply struct {
	ID     string      `json:"id"`
	OK     bool        `json:"ok"`
	Error  string      `json:"error,omitempty"`
	State  *ReplyState `json:"state,omitempty"`
	Recall *Recalled   `json:"recall,omitempty"` // cmd/recall: the skill chosen and how
}

// Recalled is what a recall chose: by the bank's features (Score = <u, psi_online>) or by the
// FRE encoding (Distance to the nearest stored latent, also when it was too far).
type Recalled struct {
	Skill    *SkillRef `json:"skill,omitempty"`
	By       string    `json:"by"` // "features" or "fre"
	Score    *Number   `json:"score,omitempty"`
	Distance *Number   `json:"distance,omitempty"`
}

func recalled(r *corebus.RecallResult, cat *corebus.Catalogue) *Recalled {
	out := &Recalled{By: "fre"}
	if r.Index >= 0 {
		out.Skill = skillRef(corebus.ActiveSkill{Source: corebus.SkillBank, Index: r.Index}, cat)
	}
	if r.ByFeatures {
		score := Number(r.Score)
		out.By, out.Score = "features", &score
	} else if r.Distance > 0 || r.Index >= 0 {
		d := Number(r.Distance)
		out.Distance = &d
	}
	return out
}

// SwitchWhy explains a skill switch the runtime made by itself.
type SwitchWhy struct {
	Trigger    string            `json:"trigger"` // obstacle or no_progress
	Blocked    []string          `json:"blocked"` // routes ruled out: left, right, over
	World      string            `json:"world"`   // the evaluation world fenced like that
	Considered int               `json:"considered"`
	Candidates []SwitchCandidate `json:"candidates"` // the best first
	Chosen     string            `json:"chosen"`     // why the first won
}

// SwitchCandidate is one skill weighed for a switch.
type SwitchCandidate struct {
	Index      int     `json:"index"`
	Success    *Number `json:"success,omitempty"`     // measured success rate in World
	SFDistance *Number `json:"sf_distance,omitempty"` // from the stuck skill
	// AfterSwitch: Success was measured in runs that switched to this skill there, not from
	// the episode's start.
	AfterSwitch bool `json:"after_switch,omitempty"`
}

func switchWhy(r *corebus.SwitchReport) *SwitchWhy {
	if r.Trigger == corebus.TriggerNone {
		return nil
	}
	out := &SwitchWhy{Trigger: r.Trigger.String(), Blocked: r.Blocked.Names(), World: r.World, Considered: r.Considered,
		Candidates: []SwitchCandidate{}, Chosen: r.Chosen}
	opt := func(v float32) *Number {
		if v != v {
			return nil
		}
		n := Number(v)
		return &n
	}
	for _, c := range r.Listed() {
		out.Candidates = append(out.Candidates, SwitchCandidate{Index: int(c.Index), Success: opt(c.Success), SFDistance: opt(c.Distance), AfterSwitch: c.AfterSwitch})
	}
	return out
}

// ReplyState is the state a reply reports along with the outcome.
type ReplyState struct {
	Mode  string    `json:"mode"`
	EStop bool      `json:"estop"`
	Skill *SkillRef `json:"skill,omitempty"`
}

// SkillRef names a skill in state and events.
type SkillRef struct {
	Index  int      `json:"index"`
	Name   string   `json:"name,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	Custom bool     `json:"custom,omitempty"` // a latent the operator sent; Index is -1
}

// ModeState is the payload of TopicMode.
type ModeState struct {
	Mode  string    `json:"mode"`
	EStop bool      `json:"estop"`
	Fault string    `json:"fault,omitempty"`
	Since time.Time `json:"since"`
}

// SkillState is the payload of TopicSkill. Skill is nil when none runs.
type SkillState struct {
	Skill *SkillRef `json:"skill"`
	Since time.Time `json:"since"`
}

// BankState is the payload of TopicBank: the skills an operator can select.
type BankState struct {
	Path       string     `json:"path"`
	Generation uint64     `json:"generation"`
	LatentDim  int        `json:"latent_dim"`
	Skills     []SkillRef `json:"skills"`
	Since      time.Time  `json:"since"`
}

// LoopTelemetry is the payload of TopicLoopTelemetry.
type LoopTelemetry struct {
	Seq             uint64    `json:"seq"`
	Time            time.Time `json:"time"`
	Ticks           uint64    `json:"ticks"`
	PolicyTicks     uint64    `json:"policy_ticks"`
	LoopHz          Number    `json:"loop_hz"`
	PolicyHz        Number    `json:"policy_hz"`
	Overruns        uint64    `json:"overruns"`
	MaxLatenessUS   int64     `json:"max_lateness_us"`
	LinkLost        uint64    `json:"link_lost"`
	LinkLatencyUS   int64     `json:"link_latency_us"`
	CommandsDropped uint64    `json:"commands_dropped"` // refused because the core's queue was full
	EventsDropped   uint64    `json:"events_dropped"`   // the core's events that found its queue full
	PublishDropped  uint64    `json:"publish_dropped"`  // messages dropped while the broker was unreachable
}

// RobotTelemetry is the payload of TopicRobotTelemetry.
type RobotTelemetry struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	Mode       string    `json:"mode"`
	BaseLinVel []Number  `json:"base_lin_vel"` // m/s, base frame
	BaseAngVel []Number  `json:"base_ang_vel"` // rad/s, base frame
	Attitude   []Number  `json:"attitude"`     // roll, pitch, yaw (rad)
	Joints     Joints    `json:"joints"`
}

// Joints holds per-joint values in the house joint order (FL_HAA ... HR_KFE).
type Joints struct {
	Pos    []Number `json:"pos"`    // rad
	Vel    []Number `json:"vel"`    // rad/s
	Torque []Number `json:"torque"` // Nm
}

// Event types on TopicEvents.
const (
	EventCommandRejected = "command_rejected"
	EventFault           = "fault"
	EventFaultCleared    = "fault_cleared"
	EventSkillSwitch     = "skill_switch"
	EventModeChange      = "mode_change"
	EventBankLoad        = "bank_load"
	EventRouteBlocked    = "route_blocked" // the running skill's route is blocked, with nowhere to switch to
	EventDeadman         = "deadman"
	EventReconnected     = "reconnected"
)

// Event is the payload of TopicEvents; only the fields of its Type are set.
type Event struct {
	Time    time.Time  `json:"time"`
	Type    string     `json:"type"`
	Command string     `json:"command,omitempty"` // the command route a rejection is about
	ID      string     `json:"id,omitempty"`
	Code    string     `json:"code,omitempty"` // see Code
	Error   string     `json:"error,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	Fault   string     `json:"fault,omitempty"`
	From    *SkillRef  `json:"from,omitempty"`
	To      *SkillRef  `json:"to,omitempty"`
	Switch  *SwitchWhy `json:"switch,omitempty"` // a switch the runtime made by itself
	Recall  *Recalled  `json:"recall,omitempty"` // a switch or rejection of cmd/recall
	Mode    string     `json:"mode,omitempty"`
	Path    string     `json:"path,omitempty"`
	OK      *bool      `json:"ok,omitempty"`
	// Outage and dropped counts of a reconnection.
	OutageMS       int64  `json:"outage_ms,omitempty"`
	PublishDropped uint64 `json:"publish_dropped,omitempty"`
	EventsDropped  uint64 `json:"events_dropped,omitempty"`
}

func robotTelemetry(seq uint64, now time.Time, s *corebus.Snapshot) RobotTelemetry {
	r := &s.Robot
	return RobotTelemetry{
		Seq: seq, Time: now, Mode: s.Mode.String(),
		BaseLinVel: numbers(make([]Number, 3), r.BaseLinVel[:]),
		BaseAngVel: numbers(make([]Number, 3), r.BaseAngVel[:]),
		Attitude:   numbers(make([]Number, 3), r.Attitude[:]),
		Joints: Joints{
			Pos:    numbers(make([]Number, 12), r.JointPos[:]),
			Vel:    numbers(make([]Number, 12), r.JointVel[:]),
			Torque: numbers(make([]Number, 12), r.JointTorque[:]),
		},
	}
}

// skillRef names the active skill using the catalogue, or nil when none runs.
func skillRef(active corebus.ActiveSkill, cat *corebus.Catalogue) *SkillRef {
	switch active.Source {
	case corebus.SkillNone:
		return nil
	case corebus.SkillLatent:
		return &SkillRef{Index: -1, Custom: true}
	}
	ref := &SkillRef{Index: active.Index}
	if cat != nil {
		for _, s := range cat.Skills {
			if s.Index == active.Index {
				ref.Name, ref.Tags = s.Name, s.Tags
			}
		}
	}
	return ref
}

func bankState(cat *corebus.Catalogue, since time.Time) BankState {
	b := BankState{Skills: []SkillRef{}, Since: since}
	if cat == nil {
		return b
	}
	b.Path, b.Generation, b.LatentDim = cat.Path, cat.Generation, cat.LatentDim
	for _, s := range cat.Skills {
		b.Skills = append(b.Skills, SkillRef{Index: s.Index, Name: s.Name, Tags: s.Tags})
	}
	return b
}
