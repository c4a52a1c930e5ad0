package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dualforce/dualforce/hw/solo12"
)

// Ranges of the checked values, inclusive unless said otherwise.
const (
	maxRobotIDLen       = 64
	maxIfaceLen         = 15 // IFNAMSIZ - 1
	maxPositionMargin   = 0.3
	maxAttitude         = 1.5                   // rad, short of pi/2
	maxOverrunBudget    = 19                    // the board gives up after 20 ms without a command
	minLinkTimeout      = 2 * time.Millisecond  // two board periods: one late packet is not a lost link
	maxLinkTimeout      = 50 * time.Millisecond // the ODRI SDK's host-side sensor timeout
	maxOffset           = math.Pi
	minStaleMs          = 1
	maxStaleMs          = 1000
	minHeartbeat        = 100 * time.Millisecond
	maxHeartbeat        = time.Minute
	maxFileMB           = 4096
	maxFiles            = 10000
	minFileDuration     = time.Second
	maxFileDuration     = 24 * time.Hour
	maxClearance        = 2.0 // m
	maxSwitchTime       = time.Minute
	maxTransition       = 2 * time.Second // a blend or a restart hold
	maxRecallDistance   = 1e3
	maxGoalDistance     = 50 // m, as an operator's goal command (runtime/mqtt)
	requiredLinkHz      = 1000
	maxTargetRate       = solo12.MaxJointVelocity
	robotIDPattern      = `^[a-z0-9-]+$`
	brokerSchemesString = "tcp://host:port or ssl://host:port"
)

var robotID = regexp.MustCompile(robotIDPattern)

// Validate checks every field and the rules across fields.
func (c *Config) Validate() error {
	if p := c.problems(); len(p) > 0 {
		return &Error{Problems: p}
	}
	return nil
}

// checker collects problems.
type checker struct{ problems []Problem }

func (k *checker) add(path, format string, args ...any) {
	k.problems = append(k.problems, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// number checks lo <= x <= hi (lo < x when openLo); NaN fails. A note says why the range.
func (k *checker) number(path string, x, lo, hi float64, openLo bool, unit string, note ...string) {
	ok := x >= lo && x <= hi
	if openLo {
		ok = ok && x > lo
	}
	if !ok {
		bracket := "["
		if openLo {
			bracket = "("
		}
		msg := fmt.Sprintf("%s is outside %s%.6g, %.6g]", strings.TrimSpace(fmt.Sprintf("%v %s", x, unit)), bracket, lo, hi)
		if len(note) > 0 {
			msg += " (" + strings.Join(note, ", ") + ")"
		}
		k.add(path, "%s", msg)
	}
}

func (k *checker) integer(path string, x, lo, hi int) {
	if x < lo || x > hi {
		k.add(path, "%d is outside [%d, %d]", x, lo, hi)
	}
}

func (k *checker) oneOf(path, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	k.add(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

func (k *checker) hostPort(path, v string) {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		k.add(path, "%q is not host:port", v)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		k.add(path, "port %q of %q is not a number in [0, 65535]", port, v)
	}
}

func (k *checker) empty(path, v, why string) {
	if v != "" {
		k.add(path, "must be empty %s", why)
	}
}

func (c *Config) problems() []Problem {
	var k checker
	switch {
	case c.RobotID == "":
		k.add("robot_id", "required (%s)", robotIDPattern)
	case len(c.RobotID) > maxRobotIDLen || !robotID.MatchString(c.RobotID):
		k.add("robot_id", "%q must match %s, at most %d characters", c.RobotID, robotIDPattern, maxRobotIDLen)
	}
	if c.Bank == "" {
		k.add("bank", "required: the skill bank file")
	}
	c.Transport.check(&k)
	c.Calibration.check(&k)
	c.Limits.check(&k)
	if c.Gains.Kp != nil {
		k.number("gains.kp", *c.Gains.Kp, 0, solo12.MaxJointKp, false, "Nm/rad", "the link's ceiling for Solo12")
	}
	if c.Gains.Kd != nil {
		k.number("gains.kd", *c.Gains.Kd, 0, solo12.MaxJointKd, false, "Nm*s/rad", "the link's ceiling for Solo12")
	}
	if c.Rates.LinkHz != requiredLinkHz {
		k.add("rates.link_hz", "%d: the master board's loop is fixed at %d Hz", c.Rates.LinkHz, requiredLinkHz)
	}
	if p := c.Rates.PolicyHz; p != 0 && (p < 0 || p > c.Rates.LinkHz || c.Rates.LinkHz%p != 0) {
		k.add("rates.policy_hz", "%d must divide rates.link_hz (%d), or be 0 for the bank's rate", p, c.Rates.LinkHz)
	}
	if c.Slider.Path != "" && !filepath.IsAbs(c.Slider.Path) {
		k.add("slider.path", "%q must be an absolute device path, or empty to find /dev/ttyACM*", c.Slider.Path)
	}
	k.integer("slider.stale_ms", c.Slider.StaleMs, minStaleMs, maxStaleMs)
	c.MQTT.check(&k)
	if c.Perception.Listen != "" {
		k.hostPort("perception.listen", c.Perception.Listen)
	}
	if c.Metrics.Listen != "" {
		k.hostPort("metrics.listen", c.Metrics.Listen)
	}
	if c.Recorder.Dir != "" {
		k.integer("recorder.max_file_mb", c.Recorder.MaxFileMB, 1, maxFileMB)
		k.integer("recorder.max_files", c.Recorder.MaxFiles, 1, maxFiles)
		if d := c.Recorder.MaxFileDuration; d != 0 && (d < minFileDuration || d > maxFileDuration) {
			k.add("recorder.max_file_duration", "%v is outside [%v, %v] (0 rotates by size only)", d, minFileDuration, maxFileDuration)
		}
	}
	c.Obstacle.check(&k)
	if b := c.Transitions.Blend; b < 0 || b > maxTransition {
		k.add("transitions.blend", "%v is outside [0s, %v] (0s switches at once)", b, maxTransition)
	}
	if r := c.Transitions.Restart; r < 0 || r > maxTransition {
		k.add("transitions.restart", "%v is outside [0s, %v] (0s blends)", r, maxTransition)
	}
	k.number("recall.max_distance", c.Recall.MaxDistance, 0, maxRecallDistance, true, "")
	k.number("navigation.goal.x", c.Navigation.Goal.X, -maxGoalDistance, maxGoalDistance, false, "m")
	k.number("navigation.goal.y", c.Navigation.Goal.Y, -maxGoalDistance, maxGoalDistance, false, "m")
	k.number("navigation.goal.yaw", c.Navigation.Goal.Yaw, -math.Pi, math.Pi, false, "rad")
	return k.problems
}

func (t *Transport) check(k *checker) {
	switch t.Kind {
	case TransportEthernet:
		switch {
		case t.Iface == "":
			k.add("transport.iface", "required for kind ethernet: the interface cabled to the board")
		case len(t.Iface) > maxIfaceLen || strings.ContainsAny(t.Iface, "/ \t\n:") || t.Iface == "." || t.Iface == "..":
			k.add("transport.iface", "%q is not a network interface name (at most %d characters, no '/', ':' or spaces)", t.Iface, maxIfaceLen)
		}
		k.empty("transport.addr", t.Addr, "for kind ethernet")
	case TransportUDP:
		if t.Addr == "" {
			k.add("transport.addr", "required for kind udp: the board side's host:port")
		} else {
			k.hostPort("transport.addr", t.Addr)
		}
		k.empty("transport.iface", t.Iface, "for kind udp")
	case TransportPipe:
		k.empty("transport.iface", t.Iface, "for kind pipe")
		k.empty("transport.addr", t.Addr, "for kind pipe")
	default:
		k.oneOf("transport.kind", t.Kind, TransportEthernet, TransportUDP, TransportPipe)
	}
}

func (c *Calibration) check(k *checker) {
	k.oneOf("calibration.mode", c.Mode, CalibrationIndex, CalibrationOffsets)
	k.oneOf("calibration.method", c.Method, "auto", "pos", "neg", "alt")
	for j, o := range c.Offsets {
		k.number(fmt.Sprintf("calibration.offsets[%d]", j), o, -maxOffset, maxOffset, false, "rad", solo12.Joint(j).String())
	}
}

func (l *Limits) check(k *checker) {
	k.number("limits.max_current", l.MaxCurrent, 0, solo12.MaxISat, true, "A")
	k.number("limits.joint_position_margin", l.JointPositionMargin, 0, maxPositionMargin, false, "rad")
	k.number("limits.max_joint_velocity", l.MaxJointVelocity, 0, solo12.MaxJointVelocity, true, "rad/s")
	k.number("limits.max_attitude", l.MaxAttitude, 0, maxAttitude, true, "rad")
	k.number("limits.max_target_rate", l.MaxTargetRate, 0, maxTargetRate, false, "rad/s", "0 = off")
	k.integer("limits.loop_overrun_budget", l.LoopOverrunBudget, 0, maxOverrunBudget)
	if l.LinkTimeout < minLinkTimeout || l.LinkTimeout > maxLinkTimeout {
		k.add("limits.link_timeout", "%v is outside [%v, %v]", l.LinkTimeout, minLinkTimeout, maxLinkTimeout)
	}
}

func (o *Obstacle) check(k *checker) {
	k.number("obstacle_switching.clearance_m", o.ClearanceM, 0, maxClearance, true, "m")
	if o.Cooldown < 0 || o.Cooldown > maxSwitchTime {
		k.add("obstacle_switching.cooldown", "%v is outside [0s, %v]", o.Cooldown, maxSwitchTime)
	}
	if o.StallAfter < 0 || o.StallAfter > maxSwitchTime {
		k.add("obstacle_switching.stall_after", "%v is outside [0s, %v] (0s turns the progress check off)", o.StallAfter, maxSwitchTime)
	}
	k.number("obstacle_switching.min_progress_m", o.MinProgressM, 0, maxClearance, true, "m")
	k.number("obstacle_switching.detour_m", o.DetourM, 0, maxClearance, false, "m")
	k.number("obstacle_switching.goal_radius_m", o.GoalRadiusM, 0, maxClearance, false, "m")
}

func (m *MQTT) check(k *checker) {
	if m.Embedded {
		k.hostPort("mqtt.listen", m.Listen)
		k.empty("mqtt.url", m.URL, "with the embedded broker (set embedded: false to use an external one)")
		k.empty("mqtt.ca_file", m.CAFile, "with the embedded broker")
		k.empty("mqtt.credentials_file", m.CredentialsFile, "with the embedded broker (its operators are in password_file)")
	} else {
		k.empty("mqtt.password_file", m.PasswordFile, "with an external broker")
		u, err := url.Parse(m.URL)
		switch {
		case m.URL == "":
			k.add("mqtt.url", "required with embedded: false (%s)", brokerSchemesString)
		case err != nil || (u.Scheme != "tcp" && u.Scheme != "ssl") || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/"):
			k.add("mqtt.url", "%q must be %s", m.URL, brokerSchemesString)
		case u.User != nil:
			k.add("mqtt.url", "must not carry credentials: name a file with mqtt.credentials_file")
		case u.Scheme == "tcp" && m.CAFile != "":
			k.add("mqtt.ca_file", "set for a plain tcp:// broker: use ssl://")
		}
	}
	if w := m.HeartbeatWindow; w != 0 && (w < minHeartbeat || w > maxHeartbeat) {
		k.add("mqtt.heartbeat_window", "%v is outside [%v, %v] (0 disables the dead-man)", w, minHeartbeat, maxHeartbeat)
	}
}
