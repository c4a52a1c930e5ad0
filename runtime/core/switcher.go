package core

import (
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
	"github.com/dualforce/dualforce/skills"
)

// SwitchConfig sets when a navigation skill gives way to another because an obstacle blocks
// its path. Skills say which way they go by tag: "left", "right", or "over" (straight ahead).
type SwitchConfig struct {
	Enabled bool
	// Clearance is how far (m) terrain may rise above the ground under the base before it counts
	// as a wall: a box the "over" skill steps across stays below it, a fence does not.
	Clearance float64
	// Ahead is how far in front of the base (m) the height map is searched.
	Ahead float64
	// Cooldown is the least time between two switches, so the robot does not dither.
	Cooldown time.Duration
}

// DefaultSwitchConfig switches on 0.3 m walls within 0.5 m, at most once a second.
func DefaultSwitchConfig() SwitchConfig {
	return SwitchConfig{Enabled: true, Clearance: 0.3, Ahead: 0.5, Cooldown: time.Second}
}

// Directions a navigation skill can take, by tag.
const (
	dirNone = iota
	dirLeft
	dirRight
	dirOver
	numDirs
)

var dirTags = [numDirs]string{dirLeft: "left", dirRight: "right", dirOver: "over"}

// Switcher picks a skill whose path is clear when the running one's is blocked.
type Switcher struct {
	cfg    SwitchConfig
	sector [skills.HeightMapPoints]uint8 // which direction's path a height-map cell lies on
	centre int                           // the cell under the base: the ground reference
	last   time.Duration
	armed  bool
}

func newSwitcher(cfg SwitchConfig) Switcher {
	s := Switcher{cfg: cfg}
	best := 1e9
	for i := range s.sector {
		x, y := skills.HeightMapPoint(i)
		if d := x*x + y*y; d < best {
			best, s.centre = d, i
		}
		if x <= 0.05 || x > cfg.Ahead {
			continue
		}
		switch {
		case y > 0.15:
			s.sector[i] = dirLeft
		case y < -0.15:
			s.sector[i] = dirRight
		default:
			s.sector[i] = dirOver
		}
	}
	return s
}

func direction(info *skills.LatentInfo) int {
	for _, t := range info.Tags {
		for d := dirLeft; d < numDirs; d++ {
			if t == dirTags[d] {
				return d
			}
		}
	}
	return dirNone
}

// next returns the bank latent to switch to, if the running skill's path is blocked and another
// direction is clear.
func (s *Switcher) next(now time.Duration, bank *skills.Bank, active corebus.ActiveSkill, hm *[skills.HeightMapPoints]float32) (int, bool) {
	if !s.cfg.Enabled || active.Source != corebus.SkillBank || (s.armed && now-s.last < s.cfg.Cooldown) {
		return 0, false
	}
	cur := direction(&bank.Latents[active.Index].Info)
	if cur == dirNone {
		return 0, false
	}
	var blocked [numDirs]bool
	ground := hm[s.centre]
	for i, d := range s.sector {
		if d != dirNone && float64(hm[i]-ground) > s.cfg.Clearance {
			blocked[d] = true
		}
	}
	if !blocked[cur] {
		return 0, false
	}
	for i := range bank.Latents {
		info := &bank.Latents[i].Info
		d := direction(info)
		if d == dirNone || blocked[d] || (info.PassedFilter != nil && !*info.PassedFilter) {
			continue
		}
		s.last, s.armed = now, true
		return i, true
	}
	return 0, false
}

func eventSwitch(from, to corebus.ActiveSkill, reason string) corebus.Event {
	return corebus.Event{Kind: corebus.EventSkillSwitch, From: from, To: to, Reason: reason}
}
