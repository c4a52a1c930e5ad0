package datafile

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dualforce/dualforce/skills"
)

// FormatVersion is the version of the layout this package writes and reads.
const FormatVersion = 1

// Archive kinds.
const (
	KindOffline = "offline"
	KindExpert  = "expert"
)

// ErrFormat wraps every error about a file that is not a valid dataset archive: truncated,
// corrupt, of another version or kind, or inconsistent with its own manifest.
var ErrFormat = errors.New("datafile: invalid dataset file")

// Manifest describes an archive; it is stored as its manifest.json member.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	Kind          string `json:"kind"`
	Task          string `json:"task"`
	// Contract is what the data was collected under: observation layout by name and order,
	// action scale, default pose, joint limits, PD gains, policy and link rates, the episode
	// length behind remaining_time. Its normaliser is the identity: statistics are fitted later.
	Contract skills.Contract `json:"contract"`
	// Transitions is the number of rows: transitions of an offline archive, states of an expert
	// archive. ExpertTransitions is how many of an offline archive's rows come from the expert.
	Transitions       int `json:"transitions"`
	ExpertTransitions int `json:"expert_transitions"`
	// Modes are the behaviours, indexed by the modes column.
	Modes []Mode `json:"modes"`
	// Seed is the collection's master seed; SeedRule says how each episode's seed follows.
	Seed     uint64 `json:"seed"`
	SeedRule string `json:"seed_rule,omitempty"`
	// Reward describes the withheld task reward of the rewards column.
	Reward string `json:"reward,omitempty"`
	// Columns documents the archive's array members; the writer fills it.
	Columns []Column `json:"columns"`
	// Generator holds the collector's full parameters (behaviour specs, task, scale).
	Generator json.RawMessage `json:"generator,omitempty"`
}

// World is the world the collector ran in, as its plan names it (a built-in world or a
// scenario file), or "" when the generator does not record one.
func (m *Manifest) World() string {
	var g struct {
		Task struct {
			World string `json:"world"`
		} `json:"task"`
	}
	if json.Unmarshal(m.Generator, &g) != nil {
		return ""
	}
	return g.Task.World
}

// Mode is one behaviour of the mix.
type Mode struct {
	Name        string `json:"name"`
	Expert      bool   `json:"expert"`
	Transitions int    `json:"transitions"`
	Episodes    int    `json:"episodes"`
	Falls       int    `json:"falls"`
	GoalReached int    `json:"goal_reached,omitempty"`
	// Routes counts the episodes by the way they went past the navigation box, on ground truth
	// (left, right, over; sim/behave.RouteTaken); episodes that never passed it are not counted.
	Routes map[string]int `json:"routes,omitempty"`
}

// Column documents one array member.
type Column struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Doc   string `json:"doc"`
}

// validate checks the manifest against the archive kind it was found in.
func (m *Manifest) validate(kind string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: manifest: %s", ErrFormat, fmt.Sprintf(format, a...))
	}
	switch {
	case m.FormatVersion != FormatVersion:
		return bad("format version %d, this reader knows %d", m.FormatVersion, FormatVersion)
	case m.Kind != kind:
		return bad("kind %q, want %q", m.Kind, kind)
	case m.Transitions <= 0:
		return bad("%d rows", m.Transitions)
	case m.ExpertTransitions < 0 || m.ExpertTransitions > m.Transitions:
		return bad("%d expert rows of %d", m.ExpertTransitions, m.Transitions)
	case kind == KindExpert && m.ExpertTransitions != m.Transitions:
		return bad("expert archive with %d of %d rows from the expert", m.ExpertTransitions, m.Transitions)
	}
	if err := m.Contract.Validate(); err != nil {
		return fmt.Errorf("%w: manifest: %w", ErrFormat, err)
	}
	if err := m.Contract.CheckFeedable(); err != nil {
		return fmt.Errorf("%w: manifest: %w", ErrFormat, err)
	}
	if kind == KindExpert {
		return nil
	}
	if len(m.Modes) == 0 {
		return bad("no modes")
	}
	seen := make(map[string]bool, len(m.Modes))
	total, expert := 0, 0
	for _, md := range m.Modes {
		if md.Name == "" || seen[md.Name] {
			return bad("mode name %q empty or repeated", md.Name)
		}
		seen[md.Name] = true
		if md.Transitions < 0 || md.Episodes < 0 || md.Falls < 0 || md.GoalReached < 0 {
			return bad("mode %q has negative counts", md.Name)
		}
		routed := 0
		for r, n := range md.Routes {
			if r != "left" && r != "right" && r != "over" || n < 0 {
				return bad("mode %q counts %d episodes on route %q (want left, right or over, counted from 0)", md.Name, n, r)
			}
			routed += n
		}
		if routed > md.Episodes {
			return bad("mode %q has %d episodes and %d by route", md.Name, md.Episodes, routed)
		}
		total += md.Transitions
		if md.Expert {
			expert += md.Transitions
		}
	}
	if total != m.Transitions || expert != m.ExpertTransitions {
		return bad("modes hold %d transitions (%d expert), the archive %d (%d expert)", total, expert, m.Transitions, m.ExpertTransitions)
	}
	return nil
}
