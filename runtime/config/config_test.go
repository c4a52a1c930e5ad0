package config

import (
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite testdata/defaults.golden.yaml")

// minimal is the smallest valid configuration.
const minimal = "robot_id: solo-1\nbank: bank.npz\ntransport: {iface: eth0}\n"

func TestMinimalAndExample(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.RobotID, want.Bank, want.Transport.Iface = "solo-1", "bank.npz", "eth0"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("minimal config:\n got %+v\nwant %+v", c, want)
	}

	// The example claims every key but three shows its default: hold it to that.
	ex, err := Parse([]byte(Example))
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	if ex.RobotID != "solo-1" || ex.Transport.Iface != "enp3s0" || ex.Bank == "" {
		t.Errorf("example's required keys: %+v", ex)
	}
	ex.RobotID, ex.Bank, ex.Transport.Iface = "", "", ""
	if !reflect.DeepEqual(ex, Default()) {
		t.Errorf("example differs from the defaults:\n got %+v\nwant %+v", ex, Default())
	}
}

func TestGoldenDefaults(t *testing.T) {
	got, err := yaml.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/defaults.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("defaults changed (go test -update if intended):\n%s", got)
	}
	// The golden file parses back to the defaults, short only of the required keys.
	c, _, problems := decode(want)
	if len(problems) > 0 || !reflect.DeepEqual(c, Default()) {
		t.Errorf("golden file decodes to %+v, %v", c, problems)
	}
}

func TestDefaultsNeedRequiredKeys(t *testing.T) {
	c := Default()
	err := c.Validate()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v", err)
	}
	var paths []string
	for _, p := range e.Problems {
		paths = append(paths, p.Path)
	}
	if got := strings.Join(paths, " "); got != "robot_id bank transport.iface" {
		t.Errorf("problems at %s, want robot_id bank transport.iface", got)
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		path string // of the (first) problem
		line int    // 0: not checked
		msg  string // substring of the problem
	}{
		{"syntax", minimal + "limits: [\n", "", 0, "did not find expected"},
		{"two documents", minimal + "---\nrobot_id: x\n", "", 4, "more than one YAML document"},
		{"not a mapping", "- robot_id\n", "", 1, "want a mapping"},
		{"unknown key", minimal + "robto_id: x\n", "robto_id", 4, "unknown key; allowed here: robot_id, transport, bank"},
		{"unknown nested key", minimal + "limits:\n  max_curent: 5\n", "limits.max_curent", 5, "allowed here: max_current, joint_position_margin"},
		{"inline password", minimal + "mqtt:\n  password: hunter2\n", "mqtt.password", 5, "secrets never go in this file"},
		{"inline username", minimal + "mqtt:\n  username: op\n", "mqtt.username", 5, "mqtt.credentials_file"},
		{"duplicate key", minimal + "bank: other.npz\n", "bank", 4, "key appears twice"},
		{"alias", minimal + "limits: &l {max_current: 5}\nslider: *l\n", "slider", 5, "anchors and aliases"},
		{"merge key", minimal + "limits:\n  <<: {max_current: 5}\n", "limits", 5, "no merge keys"},
		{"string for number", minimal + "limits: {max_current: eight}\n", "limits.max_current", 4, `want a number, got str "eight"`},
		{"float for integer", minimal + "recorder: {max_files: 2.5}\n", "recorder.max_files", 4, "want a whole number"},
		{"huge number for integer", minimal + "recorder: {max_files: 99999999999999999999}\n", "recorder.max_files", 4, "want a whole number"},
		{"integer beyond int32", minimal + "recorder: {max_files: 9999999999}\n", "recorder.max_files", 4, "whole number 9999999999 out of range"},
		{"bool as word", minimal + "slider: {enabled: maybe}\n", "slider.enabled", 4, "want true or false"},
		{"number for string", "robot_id: 1234\nbank: b\ntransport: {iface: eth0}\n", "robot_id", 1, "want a string"},
		{"duration as number", minimal + "mqtt: {heartbeat_window: 5}\n", "mqtt.heartbeat_window", 4, "want a duration"},
		{"bad duration", minimal + "mqtt: {heartbeat_window: 5 parsecs}\n", "mqtt.heartbeat_window", 4, "want a duration"},
		{"eleven offsets", minimal + "calibration: {offsets: [0,0,0,0,0,0,0,0,0,0,0]}\n", "calibration.offsets", 4, "want a list of 12 numbers, got a list of 11"},
		{"offset not a number", minimal + "calibration: {offsets: [0,0,0,x,0,0,0,0,0,0,0,0]}\n", "calibration.offsets[3]", 4, "want a number"},
		{"offset NaN", minimal + "calibration: {offsets: [0,0,0,0,0,0,0,0,.nan,0,0,0]}\n", "calibration.offsets[8]", 4, "NaN rad is outside [-3.14159, 3.14159] (HL_KFE)"},
		{"offset too big", minimal + "calibration:\n  offsets: [0,0,0,0,0,0,0,0,0,0,0,7]\n", "calibration.offsets[11]", 5, "7 rad is outside [-3.14159, 3.14159] (HR_KFE)"},
		{"section as scalar", minimal + "limits: 5\n", "limits", 4, "want a mapping"},
		{"missing robot id", "bank: b\ntransport: {iface: eth0}\n", "robot_id", 0, "required"},
		{"bad robot id", "robot_id: Solo_1\nbank: b\ntransport: {iface: eth0}\n", "robot_id", 1, `"Solo_1" must match ^[a-z0-9-]+$`},
		{"robot id with slash", "robot_id: solo/1\nbank: b\ntransport: {iface: eth0}\n", "robot_id", 1, "must match"},
		{"missing bank", "robot_id: a\ntransport: {iface: eth0}\n", "bank", 0, "required"},
		{"empty sections keep defaults", minimal + "calibration: {}\nlimits:\n", "", 0, ""},
		{"transport kind", "robot_id: a\nbank: b\ntransport: {kind: can}\n", "transport.kind", 3, `"can" is not one of ethernet, udp, pipe`},
		{"ethernet without iface", "robot_id: a\nbank: b\n", "transport.iface", 0, "required for kind ethernet"},
		{"iface too long", "robot_id: a\nbank: b\ntransport: {iface: a-very-long-interface0}\n", "transport.iface", 3, "not a network interface name"},
		{"udp without addr", "robot_id: a\nbank: b\ntransport: {kind: udp}\n", "transport.addr", 0, "required for kind udp"},
		{"udp bad addr", "robot_id: a\nbank: b\ntransport: {kind: udp, addr: localhost}\n", "transport.addr", 3, "is not host:port"},
		{"udp bad port", "robot_id: a\nbank: b\ntransport: {kind: udp, addr: 'localhost:99999'}\n", "transport.addr", 3, "not a number in [0, 65535]"},
		{"udp with iface", "robot_id: a\nbank: b\ntransport: {kind: udp, addr: '127.0.0.1:7000', iface: eth0}\n", "transport.iface", 3, "must be empty for kind udp"},
		{"calibration mode", minimal + "calibration: {mode: magic}\n", "calibration.mode", 4, `"magic" is not one of index, offsets`},
		{"calibration method", minimal + "calibration: {method: up}\n", "calibration.method", 4, "not one of auto, pos, neg, alt"},
		{"max current above link", minimal + "limits: {max_current: 20}\n", "limits.max_current", 4, "20 A is outside (0, 15.875]"},
		{"max current zero", minimal + "limits: {max_current: 0}\n", "limits.max_current", 4, "is outside (0, 15.875]"},
		{"max current inf", minimal + "limits: {max_current: .inf}\n", "limits.max_current", 4, "+Inf A is outside"},
		{"velocity", minimal + "limits: {max_joint_velocity: 100}\n", "limits.max_joint_velocity", 4, "100 rad/s is outside (0, 80]"},
		{"attitude", minimal + "limits: {max_attitude: 2}\n", "limits.max_attitude", 4, "outside (0, 1.5]"},
		{"margin", minimal + "limits: {joint_position_margin: -0.1}\n", "limits.joint_position_margin", 4, "outside [0, 0.3]"},
		{"target rate", minimal + "limits: {max_target_rate: -1}\n", "limits.max_target_rate", 4, "outside [0, 80]"},
		{"overrun budget", minimal + "limits: {loop_overrun_budget: 20}\n", "limits.loop_overrun_budget", 4, "20 is outside [0, 19]"},
		{"link timeout above the SDK's", minimal + "limits: {link_timeout: 51ms}\n", "limits.link_timeout", 4, "51ms is outside [2ms, 50ms]"},
		{"link timeout of one period", minimal + "limits: {link_timeout: 1ms}\n", "limits.link_timeout", 4, "1ms is outside [2ms, 50ms]"},
		{"restart hold too long", minimal + "transitions: {restart: 3s}\n", "transitions.restart", 4, "3s is outside [0s, 2s] (0s blends)"},
		{"kp above link", minimal + "gains: {kp: 6}\n", "gains.kp", 4, "6 Nm/rad is outside [0, 5.15646] (the link's ceiling for Solo12)"},
		{"kd above link", minimal + "gains: {kd: 0.62}\n", "gains.kd", 4, "is outside [0, 0.618776]"},
		{"kd negative", minimal + "gains: {kd: -0.1}\n", "gains.kd", 4, "is outside [0,"},
		{"link rate", minimal + "rates: {link_hz: 500}\n", "rates.link_hz", 4, "fixed at 1000 Hz"},
		{"policy rate not dividing", minimal + "rates: {policy_hz: 30}\n", "rates.policy_hz", 4, "30 must divide rates.link_hz (1000)"},
		{"policy rate above link", minimal + "rates: {policy_hz: 2000}\n", "rates.policy_hz", 4, "must divide"},
		{"policy rate negative", minimal + "rates: {policy_hz: -50}\n", "rates.policy_hz", 4, "must divide"},
		{"slider path", minimal + "slider: {path: ttyACM0}\n", "slider.path", 4, "absolute device path"},
		{"slider stale", minimal + "slider: {stale_ms: 0}\n", "slider.stale_ms", 4, "0 is outside [1, 1000]"},
		{"mqtt url with embedded", minimal + "mqtt: {url: 'tcp://broker:1883'}\n", "mqtt.url", 4, "must be empty with the embedded broker"},
		{"mqtt external without url", minimal + "mqtt: {embedded: false}\n", "mqtt.url", 0, "required with embedded: false"},
		{"mqtt bad scheme", minimal + "mqtt: {embedded: false, url: 'http://broker:80'}\n", "mqtt.url", 4, "must be tcp://host:port or ssl://host:port"},
		{"mqtt url credentials", minimal + "mqtt: {embedded: false, url: 'tcp://op:secret@broker:1883'}\n", "mqtt.url", 4, "must not carry credentials"},
		{"mqtt ca with tcp", minimal + "mqtt: {embedded: false, url: 'tcp://broker:1883', ca_file: /etc/ca.pem}\n", "mqtt.ca_file", 4, "use ssl://"},
		{"mqtt password file external", minimal + "mqtt: {embedded: false, url: 'ssl://broker:8883', password_file: /etc/p}\n", "mqtt.password_file", 4, "must be empty with an external broker"},
		{"mqtt credentials embedded", minimal + "mqtt: {credentials_file: /etc/c}\n", "mqtt.credentials_file", 4, "must be empty with the embedded broker"},
		{"mqtt listen", minimal + "mqtt: {listen: broker}\n", "mqtt.listen", 4, "is not host:port"},
		{"heartbeat short", minimal + "mqtt: {heartbeat_window: 10ms}\n", "mqtt.heartbeat_window", 4, "10ms is outside [100ms, 1m0s]"},
		{"metrics listen", minimal + "metrics: {listen: '9102'}\n", "metrics.listen", 4, "is not host:port"},
		{"recorder size", minimal + "recorder: {max_file_mb: 0}\n", "recorder.max_file_mb", 4, "0 is outside [1, 4096]"},
		{"recorder files", minimal + "recorder: {max_files: 0}\n", "recorder.max_files", 4, "outside [1, 10000]"},
		{"recorder duration", minimal + "recorder: {max_file_duration: 10ms}\n", "recorder.max_file_duration", 4, "10ms is outside [1s, 24h0m0s]"},
		{"clearance", minimal + "obstacle_switching: {clearance_m: 0}\n", "obstacle_switching.clearance_m", 4, "0 m is outside (0, 2]"},
		{"stall off", minimal + "obstacle_switching: {enabled: true, stall_after: 0s}\n", "", 0, ""},
		{"stall negative", minimal + "obstacle_switching: {stall_after: -1s}\n", "obstacle_switching.stall_after", 4, "-1s is outside [0s, 1m0s]"},
		{"cooldown long", minimal + "obstacle_switching: {cooldown: 2h}\n", "obstacle_switching.cooldown", 4, "2h0m0s is outside [0s, 1m0s]"},
		{"progress zero", minimal + "obstacle_switching: {min_progress_m: 0}\n", "obstacle_switching.min_progress_m", 4, "0 m is outside (0, 2]"},
		{"detour negative", minimal + "obstacle_switching: {detour_m: -0.1}\n", "obstacle_switching.detour_m", 4, "-0.1 m is outside [0, 2]"},
		{"detour off", minimal + "obstacle_switching: {enabled: true, detour_m: 0}\n", "", 0, ""},
		{"goal radius NaN", minimal + "obstacle_switching: {goal_radius_m: .nan}\n", "obstacle_switching.goal_radius_m", 4, "NaN m is outside [0, 2]"},
		{"blend off", minimal + "transitions: {blend: 0s}\n", "", 0, ""},
		{"blend long", minimal + "transitions: {blend: 5s}\n", "transitions.blend", 4, "5s is outside [0s, 2s]"},
		{"recall distance", minimal + "recall: {max_distance: 0}\n", "recall.max_distance", 4, "0 is outside (0, 1000]"},
		{"goal", minimal + "navigation: {goal: {x: 2, y: -0.5, yaw: 3.1}}\n", "", 0, ""},
		{"goal far", minimal + "navigation: {goal: {x: 51}}\n", "navigation.goal.x", 4, "51 m is outside [-50, 50]"},
		{"goal NaN", minimal + "navigation: {goal: {y: .nan}}\n", "navigation.goal.y", 4, "NaN m is outside [-50, 50]"},
		{"goal heading", minimal + "navigation: {goal: {yaw: 4}}\n", "navigation.goal.yaw", 4, "4 rad is outside [-3.14159, 3.14159]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if tc.msg == "" { // a valid variation
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want a config error", err)
			}
			p := e.Problems[0]
			if p.Path != tc.path || (tc.line != 0 && p.Line != tc.line) || !strings.Contains(p.Msg, tc.msg) {
				t.Errorf("got %q (path %q line %d)\nwant path %q line %d containing %q", err, p.Path, p.Line, tc.path, tc.line, tc.msg)
			}
		})
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := Parse([]byte("robot_id: A\nbank: b\ntransport: {iface: eth0}\nlimits: {max_current: 99, max_attitude: 9}\nrates: {policy_hz: 7}\n"))
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 4 {
		t.Fatalf("got %v, want 4 problems", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "\n  limits.max_current (line 4): 99 A") {
		t.Errorf("message lists no path and line:\n%s", msg)
	}
}

func TestLoad(t *testing.T) {
	path := t.TempDir() + "/runtime.yaml"
	if err := os.WriteFile(path, []byte(minimal+"rates: {policy_hz: 50}\nmqtt: {heartbeat_window: 2s}\ngains: {kp: 3.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rates.PolicyHz != 50 || c.MQTT.HeartbeatWindow != 2*time.Second || c.Gains.Kp == nil || *c.Gains.Kp != 3.5 || c.Gains.Kd != nil {
		t.Errorf("loaded %+v", c)
	}
	if c.Slider.StaleAfter() != 50*time.Millisecond || c.Calibration.SearchMethod().String() != "AUTO" {
		t.Errorf("derived values %v %v", c.Slider.StaleAfter(), c.Calibration.SearchMethod())
	}
	if err := os.WriteFile(path, []byte("robot_id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the file: %v", err)
	}
	if _, err := Load(path + ".missing"); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("missing file: %v", err)
	}
}

func TestEmptyDocumentIsDefaults(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "~\n"} {
		c, _, problems := decode([]byte(doc))
		if len(problems) > 0 || !reflect.DeepEqual(c, Default()) {
			t.Errorf("%q: %+v %v", doc, c, problems)
		}
	}
}
