package mqtt

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// One bad estimate must not stop telemetry: NaN and infinities become null.
func TestRobotTelemetryEncodesNonFiniteAsNull(t *testing.T) {
	var s corebus.Snapshot
	s.Mode = corebus.ModeRun
	s.Robot.BaseLinVel = [3]float64{0.5, math.NaN(), math.Inf(1)}
	s.Robot.JointPos[11] = math.Inf(-1)
	s.Robot.Attitude[2] = 1e-7
	b, err := json.Marshal(robotTelemetry(7, decodeNow, &s))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"seq":7`, `"mode":"run"`, `"base_lin_vel":[0.5,null,null]`, `"attitude":[0,0,1e-7]`, `,null]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestSkillRef(t *testing.T) {
	cat := newFakeCore().Catalogue()
	for _, tc := range []struct {
		active corebus.ActiveSkill
		want   string
	}{
		{corebus.ActiveSkill{}, "null"},
		{corebus.ActiveSkill{Source: corebus.SkillBank, Index: 1}, `{"index":1,"name":"bound","tags":["fast","high"]}`},
		{corebus.ActiveSkill{Source: corebus.SkillBank, Index: 9}, `{"index":9}`},
		{corebus.ActiveSkill{Source: corebus.SkillLatent}, `{"index":-1,"custom":true}`},
	} {
		b, _ := json.Marshal(skillRef(tc.active, cat))
		if string(b) != tc.want {
			t.Errorf("skillRef(%+v) = %s, want %s", tc.active, b, tc.want)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	core := newFakeCore()
	bad := DefaultLimits()
	bad.MaxVy = 0
	for name, cfg := range map[string]Config{
		"robot id":        {RobotID: "R1", Broker: "tcp://127.0.0.1:1883"},
		"broker":          {RobotID: "r1", Broker: "http://127.0.0.1:1883"},
		"partial limits":  {RobotID: "r1", Broker: "tcp://127.0.0.1:1883", Limits: bad},
		"backoff":         {RobotID: "r1", Broker: "tcp://127.0.0.1:1883", Backoff: Backoff{Min: time.Second, Max: time.Millisecond}},
		"negative window": {RobotID: "r1", Broker: "tcp://127.0.0.1:1883", Heartbeat: -time.Second},
	} {
		if _, err := New(cfg, core); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
	}
}

// A switch the runtime made by itself carries its reasons; a recall its choice.
func TestSwitchAndRecallPayloads(t *testing.T) {
	cat := &corebus.Catalogue{Skills: []corebus.Skill{{Index: 0, Name: "over"}, {Index: 2, Name: "right", Tags: []string{"right"}}}}
	rep := corebus.SwitchReport{Trigger: corebus.TriggerObstacle, Blocked: corebus.RouteLeft, World: "obstacle_fence_left",
		Considered: 2, Chosen: "highest measured success in the matching world"}
	rep.Candidates[0] = corebus.Candidate{Index: 2, Success: 0.9, Distance: 1.5, AfterSwitch: true}
	rep.Candidates[1] = corebus.Candidate{Index: 0, Success: float32(math.NaN()), Distance: float32(math.NaN())}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"switch", switchWhy(&rep), `{"trigger":"obstacle","blocked":["left"],"world":"obstacle_fence_left","considered":2,` +
			`"candidates":[{"index":2,"success":0.8999999761581421,"sf_distance":1.5,"after_switch":true},{"index":0}],"chosen":"highest measured success in the matching world"}`},
		{"operator switch has none", switchWhy(&corebus.SwitchReport{}), `null`},
		{"recall by features", recalled(&corebus.RecallResult{Valid: true, Index: 2, ByFeatures: true, Score: 0.75}, cat),
			`{"skill":{"index":2,"name":"right","tags":["right"]},"by":"features","score":0.75}`},
		{"recall by FRE", recalled(&corebus.RecallResult{Valid: true, Index: 0, Distance: 0.2}, cat), `{"skill":{"index":0,"name":"over"},"by":"fre","distance":0.2}`},
		{"recall refused as too far", recalled(&corebus.RecallResult{Valid: true, Index: -1, Distance: 2}, cat), `{"by":"fre","distance":2}`},
		{"recall refused before choosing", recalled(&corebus.RecallResult{Valid: true, Index: -1}, cat), `{"by":"fre"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}
