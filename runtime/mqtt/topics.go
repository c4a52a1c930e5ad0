package mqtt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Version is the interface version carried in every topic.
const Version = "v1"

// Command routes: the part of a command topic after "<prefix>cmd/".
const (
	RouteSkill      = "skill"
	RouteMode       = "mode"
	RouteEStop      = "estop"
	RouteEStopClear = "estop/clear"
	RouteVelocity   = "velocity"
	RouteGoal       = "goal"
	RouteBank       = "bank"
	RouteHeartbeat  = "heartbeat"
	RouteRecall     = "recall"
)

// Topic suffixes the runtime publishes under its prefix.
const (
	TopicConnection     = "state/connection"
	TopicMode           = "state/mode"
	TopicSkill          = "state/skill"
	TopicBank           = "state/bank"
	TopicLoopTelemetry  = "telemetry/loop"
	TopicRobotTelemetry = "telemetry/robot"
	TopicEvents         = "events"
)

// Topics builds the topic names of one robot.
type Topics struct{ prefix string }

// NewTopics returns the topics of robotID, which must match [a-z0-9-]+.
func NewTopics(robotID string) (Topics, error) {
	if !validRobotID(robotID) {
		return Topics{}, fmt.Errorf("%w: robot id %q must match [a-z0-9-]+", ErrConfig, robotID)
	}
	return Topics{prefix: "solo/" + Version + "/" + robotID + "/"}, nil
}

func validRobotID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Prefix is "solo/v1/<robot_id>/".
func (t Topics) Prefix() string { return t.prefix }

// Topic is the full name of a suffix such as TopicMode.
func (t Topics) Topic(suffix string) string { return t.prefix + suffix }

// Command is the full name of a command route such as RouteSkill.
func (t Topics) Command(route string) string { return t.prefix + "cmd/" + route }

// CommandFilter matches every command topic.
func (t Topics) CommandFilter() string { return t.prefix + "cmd/#" }

// Reply is the conventional reply topic of an operator client.
func (t Topics) Reply(clientID string) string { return t.prefix + "reply/" + clientID }

// route returns the command route of topic, or false if topic is not a
// command topic of this robot.
func (t Topics) route(topic string) (string, bool) {
	return strings.CutPrefix(topic, t.prefix+"cmd/")
}

// robotOwned reports whether topic is one only the robot may publish to.
func (t Topics) robotOwned(topic string) bool {
	rest, ok := strings.CutPrefix(topic, t.prefix)
	if !ok {
		return false
	}
	return rest == TopicEvents || strings.HasPrefix(rest, "state/") || strings.HasPrefix(rest, "telemetry/")
}

// checkReplyTo accepts a topic the robot may publish a reply to: a valid MQTT
// topic name, not a system topic, and not one of the robot's own command,
// state, telemetry or event topics (a reply must not spoof or command).
func (t Topics) checkReplyTo(topic string) error {
	switch {
	case topic == "" || len(topic) > 256:
		return fmt.Errorf("reply_to must be 1 to 256 bytes long")
	case !utf8.ValidString(topic) || strings.ContainsAny(topic, "+#\x00"):
		return fmt.Errorf("reply_to %q is not a valid topic name", topic)
	case strings.HasPrefix(topic, "$"):
		return fmt.Errorf("reply_to %q is a system topic", topic)
	case t.robotOwned(topic):
		return fmt.Errorf("reply_to %q is one of the robot's own topics", topic)
	}
	if _, isCmd := t.route(topic); isCmd {
		return fmt.Errorf("reply_to %q is a command topic", topic)
	}
	return nil
}
