package config

import (
	_ "embed"
	"time"

	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/hw/solo12"
	"github.com/dualforce/dualforce/runtime/core"
)

// Example is an annotated, valid configuration for a real robot.
//
//go:embed testdata/example.yaml
var Example string

// Config is the runtime's configuration.
type Config struct {
	// RobotID names the robot in MQTT topics and recordings: [a-z0-9-]+. Required.
	RobotID     string      `yaml:"robot_id"`
	Transport   Transport   `yaml:"transport"`
	Bank        string      `yaml:"bank"` // skill bank file. Required.
	Calibration Calibration `yaml:"calibration"`
	Limits      Limits      `yaml:"limits"`
	Gains       Gains       `yaml:"gains"`
	Rates       Rates       `yaml:"rates"`
	Slider      Slider      `yaml:"slider"`
	MQTT        MQTT        `yaml:"mqtt"`
	Perception  Perception  `yaml:"perception"`
	Metrics     Metrics     `yaml:"metrics"`
	Recorder    Recorder    `yaml:"recorder"`
	Obstacle    Obstacle    `yaml:"obstacle_switching"`
	Transitions Transitions `yaml:"transitions"`
	Recall      Recall      `yaml:"recall"`
	Navigation  Navigation  `yaml:"navigation"`
}

// Transport kinds.
const (
	TransportEthernet = "ethernet" // raw frames on a network interface (the real board)
	TransportUDP      = "udp"      // frames tunnelled over UDP (a simulated board elsewhere)
	TransportPipe     = "pipe"     // an in-process simulated board
)

// Transport is how the runtime reaches the master board.
type Transport struct {
	Kind  string `yaml:"kind"`  // ethernet, udp or pipe
	Iface string `yaml:"iface"` // ethernet: the interface cabled to the board. Required for ethernet.
	Addr  string `yaml:"addr"`  // udp: the board side's host:port. Required for udp.
}

// Calibration modes.
const (
	CalibrationIndex   = "index"   // search every encoder index at start-up, then apply Offsets
	CalibrationOffsets = "offsets" // trust the current encoder zero and apply Offsets
)

// Calibration is how joint positions get their zero at start-up.
type Calibration struct {
	Mode string `yaml:"mode"` // index or offsets
	// Method is the index search direction for every joint: auto, pos, neg or alt.
	Method  string                    `yaml:"method"`
	Offsets [solo12.NumJoints]float64 `yaml:"offsets"` // rad, joint order
}

// SearchMethod is Method as hw/solo12 names it; Method must have passed Validate.
func (c Calibration) SearchMethod() solo12.SearchMethod {
	return searchMethods[c.Method]
}

var searchMethods = map[string]solo12.SearchMethod{
	"auto": solo12.SearchAuto, "pos": solo12.SearchPositive, "neg": solo12.SearchNegative, "alt": solo12.SearchAlternate,
}

// Limits are the safety supervisor's thresholds. Crossing any of them latches the robot into
// safety damping until an explicit reset.
type Limits struct {
	MaxCurrent float64 `yaml:"max_current"` // A, every motor's current saturation
	// JointPositionMargin is how far (rad) a joint may pass its limit (HAA 0.9, HFE 1.45,
	// KFE 2.8 rad either way) before the supervisor trips.
	JointPositionMargin float64 `yaml:"joint_position_margin"`
	MaxJointVelocity    float64 `yaml:"max_joint_velocity"` // rad/s, any joint
	MaxAttitude         float64 `yaml:"max_attitude"`       // rad, |roll| or |pitch|
	// MaxTargetRate bounds how fast a joint's position target may move (rad/s), smoothing
	// skill switches; 0 leaves targets as the policy sets them.
	MaxTargetRate float64 `yaml:"max_target_rate"`
	// LoopOverrunBudget is how many consecutive late control periods are tolerated before the
	// supervisor trips; the board itself gives up after 20 ms without a command.
	LoopOverrunBudget int `yaml:"loop_overrun_budget"`
	// LinkTimeout is how long the runtime waits for a fresh sensor packet before it latches a
	// fault. The default matches the board's own 20 ms command timeout; the ODRI SDK's host side
	// waits 50 ms, the most this accepts.
	LinkTimeout time.Duration `yaml:"link_timeout"`
}

// Gains override the bank's joint PD gains; nil keeps the bank's.
type Gains struct {
	Kp *float64 `yaml:"kp"` // Nm/rad
	Kd *float64 `yaml:"kd"` // Nm*s/rad
}

// Rates of the control loop.
type Rates struct {
	LinkHz int `yaml:"link_hz"` // the master board's loop: 1000
	// PolicyHz overrides the bank's policy rate; 0 keeps the bank's. It must divide LinkHz.
	PolicyHz int `yaml:"policy_hz"`
}

// Slider is the serial slider box with the hardware E-stop.
type Slider struct {
	Enabled bool   `yaml:"enabled"`
	Path    string `yaml:"path"`     // serial device; "" finds /dev/ttyACM*
	StaleMs int    `yaml:"stale_ms"` // silence (ms) after which the box counts as lost: E-stop
}

// StaleAfter is StaleMs as a duration.
func (s Slider) StaleAfter() time.Duration { return time.Duration(s.StaleMs) * time.Millisecond }

// MQTT is the operator interface. The runtime either embeds a broker (a lone robot) or
// connects to an external one (a fleet).
//
// It mirrors the file-based parts of runtime/mqtt's Config and BrokerConfig, which carry no
// YAML tags and hold loaded credentials rather than file names.
type MQTT struct {
	Embedded bool   `yaml:"embedded"`
	Listen   string `yaml:"listen"` // embedded: host:port of the broker; loopback unless PasswordFile is set
	// PasswordFile lists the operators' accounts of the embedded broker (mosquitto_passwd format).
	PasswordFile string `yaml:"password_file"`
	URL          string `yaml:"url"`     // external: tcp://host:port or ssl://host:port
	CAFile       string `yaml:"ca_file"` // external ssl://: PEM roots; system roots when empty
	// CredentialsFile holds "username:password" for the external broker (mode 0600).
	CredentialsFile string `yaml:"credentials_file"`
	// HeartbeatWindow enables the operator dead-man when positive: operator silence longer than
	// this makes the robot stand still.
	HeartbeatWindow time.Duration `yaml:"heartbeat_window"`
}

// Perception is where the perception stack's datagrams (height map, mocap pose; hw/perception)
// arrive. Navigation banks need it; locomotion banks ignore it.
type Perception struct {
	Listen string `yaml:"listen"` // UDP host:port to receive on; "" = no perception
}

// Metrics is the Prometheus endpoint.
type Metrics struct {
	Listen string `yaml:"listen"` // host:port serving /metrics; "" disables it
}

// Recorder is the flight recorder.
type Recorder struct {
	Dir             string        `yaml:"dir"` // "" disables recording
	MaxFileMB       int           `yaml:"max_file_mb"`
	MaxFiles        int           `yaml:"max_files"`
	MaxFileDuration time.Duration `yaml:"max_file_duration"` // 0: rotate by size only
}

// Obstacle configures skill switching (navigation banks): a skill gives way when the height map
// shows a wall on its route, or when it makes no progress towards the goal for StallAfter.
type Obstacle struct {
	Enabled    bool          `yaml:"enabled"`
	ClearanceM float64       `yaml:"clearance_m"` // m of clearance below which the runtime switches skill
	Cooldown   time.Duration `yaml:"cooldown"`    // the least time between two switches
	// StallAfter is how long a running skill may get no closer to the goal before its route
	// counts as blocked (unlike a wall, a stall leaves that route to other skills when no route
	// is clear); 0 turns the progress check off.
	StallAfter   time.Duration `yaml:"stall_after"`
	MinProgressM float64       `yaml:"min_progress_m"` // m closer to the goal that counts as progress
	// DetourM is how far (m) moving across the way to the goal counts as progress too (going
	// round a fence); 0: only getting closer counts.
	DetourM     float64 `yaml:"detour_m"`
	GoalRadiusM float64 `yaml:"goal_radius_m"` // once within this distance of the goal, no stall until the next goal
	// KeepMeasured lets the skill that started the run, when a wall blocks its way round, run on
	// if it was measured to get through the matching fenced world by itself at least as well as
	// any candidate after a switch there (a skill that reacts to the fence); a stall still
	// switches.
	KeepMeasured bool `yaml:"keep_measured"`
}

// Navigation is what a navigation bank's skills run to before an operator sends a goal.
type Navigation struct {
	// Goal is the goal in the world (motion-capture) frame until an operator sends one
	// (cmd/goal); locomotion banks ignore it. Default: the origin.
	Goal Goal `yaml:"goal"`
}

// Goal is a navigation goal: position in m, heading in rad.
type Goal struct {
	X   float64 `yaml:"x"`
	Y   float64 `yaml:"y"`
	Yaw float64 `yaml:"yaw"`
}

// Transitions shape every skill switch while running.
type Transitions struct {
	// Blend is how long the joint targets take to move from the old skill's to the new one's
	// (inside limits.max_target_rate); 0 switches at once.
	Blend time.Duration `yaml:"blend"`
	// Restart, when positive, makes the runtime's own switches (obstacle_switching) hand over
	// at a standstill: the default pose held this long, then the new skill started as a run
	// starts one. Skills are trained on episodes that start standing; taken over mid-stride
	// they often do not get going. Operator switches always blend; 0 blends these too.
	Restart time.Duration `yaml:"restart"`
}

// Recall configures recall by reward (cmd/recall).
type Recall struct {
	// MaxDistance is how far (latent units) the nearest stored latent may lie from a reward's
	// FRE encoding for a recall to run it; a command may ask for another threshold.
	MaxDistance float64 `yaml:"max_distance"`
}

// Default values of the keys a file leaves out.
const (
	DefaultTransport           = TransportEthernet
	DefaultMaxAttitude         = 0.8 // rad
	DefaultLoopOverrunBudget   = 5
	DefaultLinkHz              = 1000
	DefaultMQTTListen          = "127.0.0.1:1883"
	DefaultMetricsListen       = "127.0.0.1:9102"
	DefaultRecorderDir         = "/var/lib/dualforce/recordings"
	DefaultRecorderMaxFileMB   = 256
	DefaultRecorderMaxFiles    = 20
	DefaultRecorderMaxDuration = 10 * time.Minute
)

// Default returns the configuration a file starts from. RobotID, Bank and Transport.Iface have
// no sensible default: Validate reports them missing.
func Default() Config {
	sw := core.DefaultSwitchConfig()
	return Config{
		Transport:   Transport{Kind: DefaultTransport},
		Calibration: Calibration{Mode: CalibrationIndex, Method: "auto"},
		Limits: Limits{
			MaxCurrent:        solo12.MaxCurrent,
			MaxJointVelocity:  solo12.MaxJointVelocity,
			MaxAttitude:       DefaultMaxAttitude,
			LoopOverrunBudget: DefaultLoopOverrunBudget,
			MaxTargetRate:     core.DefaultMaxTargetRate,
			LinkTimeout:       core.DefaultLinkTimeout,
		},
		Rates:    Rates{LinkHz: DefaultLinkHz},
		Slider:   Slider{Enabled: true, StaleMs: int(slider.DefaultStaleAfter / time.Millisecond)},
		MQTT:     MQTT{Embedded: true, Listen: DefaultMQTTListen},
		Metrics:  Metrics{Listen: DefaultMetricsListen},
		Recorder: Recorder{Dir: DefaultRecorderDir, MaxFileMB: DefaultRecorderMaxFileMB, MaxFiles: DefaultRecorderMaxFiles, MaxFileDuration: DefaultRecorderMaxDuration},
		Obstacle: Obstacle{ClearanceM: sw.Clearance, Cooldown: sw.Cooldown, StallAfter: sw.StallAfter,
			MinProgressM: sw.MinProgress, DetourM: sw.Detour, GoalRadiusM: sw.GoalRadius, KeepMeasured: sw.KeepMeasured},
		Transitions: Transitions{Blend: core.DefaultBlend, Restart: sw.Restart},
		Recall:      Recall{MaxDistance: core.DefaultRecallMaxDistance},
	}
}
