package mqtt

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

var decodeNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func testValidator(t testing.TB) *Validator {
	topics, err := NewTopics(testRobot)
	if err != nil {
		t.Fatal(err)
	}
	return &Validator{Topics: topics, Limits: DefaultLimits(), Catalogue: newFakeCore(), BankDir: "/banks"}
}

// at formats decodeNow shifted by d, as an operator's issued_at.
func at(d time.Duration) string { return decodeNow.Add(d).Format(time.RFC3339Nano) }

// hdr is a valid header for a command issued 100 ms before decodeNow.
func hdr(rest string) string {
	h := fmt.Sprintf(`"id":"c1","issued_at":%q,"expires_in_ms":2000,"reply_to":"ops/alice"`, at(-100*time.Millisecond))
	if rest == "" {
		return "{" + h + "}"
	}
	return "{" + h + "," + rest + "}"
}

func TestDecodeAccepts(t *testing.T) {
	v := testValidator(t)
	for _, tc := range []struct {
		name, route, payload string
		check                func(corebus.Command) bool
	}{
		{"skill by index", RouteSkill, hdr(`"select":{"index":1}`), func(c corebus.Command) bool {
			return c.Kind == corebus.KindSkill && c.Skill.By == corebus.SelectByIndex && c.Skill.Index == 1 && c.Skill.Generation == 1
		}},
		{"skill by name", RouteSkill, hdr(`"select":{"name":"pace"}`), func(c corebus.Command) bool {
			return c.Skill.By == corebus.SelectByName && c.Skill.Index == 2
		}},
		{"skill by tag picks the lowest index", RouteSkill, hdr(`"select":{"tag":"walk"}`), func(c corebus.Command) bool {
			return c.Skill.By == corebus.SelectByTag && c.Skill.Index == 0
		}},
		{"skill by latent", RouteSkill, hdr(`"select":{"latent":[0.5,-1,2.25,0]}`), func(c corebus.Command) bool {
			return c.Skill.By == corebus.SelectByLatent && c.Skill.Index == -1 && fmt.Sprint(c.Skill.Latent) == "[0.5 -1 2.25 0]"
		}},
		{"mode", RouteMode, hdr(`"mode":"run"`), func(c corebus.Command) bool {
			return c.Kind == corebus.KindMode && c.Mode == corebus.ModeRun && c.ID == "c1" && c.ReplyTo == "ops/alice"
		}},
		{"estop", RouteEStop, hdr(""), func(c corebus.Command) bool { return c.Kind == corebus.KindEStop }},
		{"estop clear", RouteEStopClear, hdr(""), func(c corebus.Command) bool { return c.Kind == corebus.KindEStopClear }},
		{"velocity without id or expiry", RouteVelocity,
			fmt.Sprintf(`{"vx":0.5,"vy":-0.25,"yaw_rate":1,"issued_at":%q}`, at(-100*time.Millisecond)),
			func(c corebus.Command) bool {
				return c.Kind == corebus.KindVelocity && c.Velocity == corebus.Velocity{Vx: 0.5, Vy: -0.25, YawRate: 1} &&
					c.ID == "" && c.Lifetime == 400*time.Millisecond
			}},
		{"goal", RouteGoal, hdr(`"x":3,"y":-4,"yaw":3.14`), func(c corebus.Command) bool {
			return c.Kind == corebus.KindGoal && c.Goal == corebus.Goal{X: 3, Y: -4, Yaw: 3.14}
		}},
		{"bank relative", RouteBank, hdr(`"path":"solo2.npz"`), func(c corebus.Command) bool { return c.BankPath == "/banks/solo2.npz" }},
		{"bank absolute inside", RouteBank, hdr(`"path":"/banks/sub/../x.npz"`), func(c corebus.Command) bool { return c.BankPath == "/banks/x.npz" }},
		{"heartbeat", RouteHeartbeat, fmt.Sprintf(`{"issued_at":%q}`, at(0)), func(c corebus.Command) bool {
			return c.Kind == corebus.KindHeartbeat && c.Lifetime == 500*time.Millisecond
		}},
		{"recall", RouteRecall, hdr(`"reward":{"joint_pos.FL_KFE":-1,"base_lin_vel.x":0.5}`), func(c corebus.Command) bool {
			return c.Kind == corebus.KindRecall && c.Recall.MaxDistance == 0 &&
				fmt.Sprint(c.Recall.Reward) == "[{base_lin_vel.x 0.5} {joint_pos.FL_KFE -1}]"
		}},
		{"recall with a distance", RouteRecall, hdr(`"reward":{"base_ang_vel.z":1},"max_distance":0.25`), func(c corebus.Command) bool {
			return c.Recall.MaxDistance == 0.25 && len(c.Recall.Reward) == 1
		}},
		{"issued slightly ahead of the robot's clock", RouteMode,
			fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":2000,"mode":"stand"}`, at(time.Second)),
			func(c corebus.Command) bool { return c.Lifetime == 3*time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Decode(tc.route, []byte(tc.payload), false, decodeNow)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !tc.check(c) {
				t.Fatalf("decoded %+v", c)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	v := testValidator(t)
	noBanks := testValidator(t)
	noBanks.BankDir = ""
	for _, tc := range []struct {
		name, route, payload string
		retained             bool
		want                 error
		v                    *Validator
	}{
		{"retained", RouteMode, hdr(`"mode":"stand"`), true, ErrRetained, nil},
		{"unknown route", "dance", hdr(""), false, ErrUnknownCommand, nil},
		{"empty", RouteMode, ``, false, ErrMalformed, nil},
		{"not json", RouteMode, `stand please`, false, ErrMalformed, nil},
		{"json array", RouteMode, `[1,2]`, false, ErrMalformed, nil},
		{"json null", RouteMode, `null`, false, ErrMalformed, nil},
		{"truncated", RouteMode, hdr(`"mode":"stand"`)[:40], false, ErrMalformed, nil},
		{"trailing data", RouteMode, hdr(`"mode":"stand"`) + `{}`, false, ErrMalformed, nil},
		{"unknown field", RouteMode, hdr(`"mode":"stand","speed":3`), false, ErrMalformed, nil},
		{"too large", RouteMode, hdr(`"mode":"` + strings.Repeat("x", MaxPayload) + `"`), false, ErrMalformed, nil},
		{"missing id", RouteMode, fmt.Sprintf(`{"issued_at":%q,"expires_in_ms":2000,"mode":"stand"}`, at(0)), false, ErrMalformed, nil},
		{"bad id", RouteMode, fmt.Sprintf(`{"id":"a b","issued_at":%q,"expires_in_ms":2000,"mode":"stand"}`, at(0)), false, ErrMalformed, nil},
		{"id not a string", RouteMode, fmt.Sprintf(`{"id":7,"issued_at":%q,"expires_in_ms":2000,"mode":"stand"}`, at(0)), false, ErrMalformed, nil},
		{"missing issued_at", RouteMode, `{"id":"c1","expires_in_ms":2000,"mode":"stand"}`, false, ErrMalformed, nil},
		{"issued_at not RFC 3339", RouteMode, `{"id":"c1","issued_at":1717243200000,"expires_in_ms":2000,"mode":"stand"}`, false, ErrMalformed, nil},
		{"missing expires_in_ms", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"mode":"stand"}`, at(0)), false, ErrMalformed, nil},
		{"expires_in_ms zero", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":0,"mode":"stand"}`, at(0)), false, ErrOutOfRange, nil},
		{"expires_in_ms too long", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":600000,"mode":"stand"}`, at(0)), false, ErrOutOfRange, nil},
		{"expires_in_ms fractional", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":1.5,"mode":"stand"}`, at(0)), false, ErrMalformed, nil},
		{"expired", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":1000,"mode":"stand"}`, at(-10*time.Second)), false, ErrExpired, nil},
		{"expired exactly now", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":1000,"mode":"stand"}`, at(-time.Second)), false, ErrExpired, nil},
		{"velocity expired", RouteVelocity, fmt.Sprintf(`{"vx":0,"vy":0,"yaw_rate":0,"issued_at":%q}`, at(-time.Second)), false, ErrExpired, nil},
		{"issued in the future", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":1000,"mode":"stand"}`, at(time.Minute)), false, ErrOutOfRange, nil},
		{"unknown skill index", RouteSkill, hdr(`"select":{"index":7}`), false, ErrUnknownSkill, nil},
		{"negative skill index", RouteSkill, hdr(`"select":{"index":-1}`), false, ErrUnknownSkill, nil},
		{"unknown skill name", RouteSkill, hdr(`"select":{"name":"moonwalk"}`), false, ErrUnknownSkill, nil},
		{"unknown skill tag", RouteSkill, hdr(`"select":{"tag":"fly"}`), false, ErrUnknownSkill, nil},
		{"select missing", RouteSkill, hdr(""), false, ErrMalformed, nil},
		{"select empty", RouteSkill, hdr(`"select":{}`), false, ErrMalformed, nil},
		{"select two ways", RouteSkill, hdr(`"select":{"index":1,"name":"trot"}`), false, ErrMalformed, nil},
		{"select unknown way", RouteSkill, hdr(`"select":{"colour":"red"}`), false, ErrMalformed, nil},
		{"latent too short", RouteSkill, hdr(`"select":{"latent":[1,2,3]}`), false, ErrOutOfRange, nil},
		{"latent empty", RouteSkill, hdr(`"select":{"latent":[]}`), false, ErrOutOfRange, nil},
		{"latent beyond float32", RouteSkill, hdr(`"select":{"latent":[1,2,3,1e39]}`), false, ErrMalformed, nil},
		{"latent NaN", RouteSkill, hdr(`"select":{"latent":[1,2,3,NaN]}`), false, ErrMalformed, nil},
		{"latent string", RouteSkill, hdr(`"select":{"latent":[1,2,3,"4"]}`), false, ErrMalformed, nil},
		{"unknown mode", RouteMode, hdr(`"mode":"walk"`), false, ErrOutOfRange, nil},
		{"mode unknown is not commandable", RouteMode, hdr(`"mode":"unknown"`), false, ErrOutOfRange, nil},
		{"mode missing", RouteMode, hdr(""), false, ErrOutOfRange, nil},
		{"velocity beyond limit", RouteVelocity, fmt.Sprintf(`{"vx":2,"vy":0,"yaw_rate":0,"issued_at":%q}`, at(0)), false, ErrOutOfRange, nil},
		{"yaw rate beyond limit", RouteVelocity, fmt.Sprintf(`{"vx":0,"vy":0,"yaw_rate":-1e308,"issued_at":%q}`, at(0)), false, ErrOutOfRange, nil},
		{"velocity field missing", RouteVelocity, fmt.Sprintf(`{"vx":0,"yaw_rate":0,"issued_at":%q}`, at(0)), false, ErrMalformed, nil},
		{"velocity NaN", RouteVelocity, fmt.Sprintf(`{"vx":NaN,"vy":0,"yaw_rate":0,"issued_at":%q}`, at(0)), false, ErrMalformed, nil},
		{"velocity Infinity", RouteVelocity, fmt.Sprintf(`{"vx":1e999,"vy":0,"yaw_rate":0,"issued_at":%q}`, at(0)), false, ErrMalformed, nil},
		{"velocity misspelt field", RouteVelocity, fmt.Sprintf(`{"vx":0,"vy":0,"yawrate":0,"issued_at":%q}`, at(0)), false, ErrMalformed, nil},
		{"goal yaw beyond pi", RouteGoal, hdr(`"x":1,"y":1,"yaw":4`), false, ErrOutOfRange, nil},
		{"goal too far", RouteGoal, hdr(`"x":1e6,"y":1,"yaw":0`), false, ErrOutOfRange, nil},
		{"bank escaping upwards", RouteBank, hdr(`"path":"../etc/passwd"`), false, ErrOutOfRange, nil},
		{"bank outside", RouteBank, hdr(`"path":"/etc/passwd"`), false, ErrOutOfRange, nil},
		{"bank prefix trick", RouteBank, hdr(`"path":"/banks2/x.npz"`), false, ErrOutOfRange, nil},
		{"bank path empty", RouteBank, hdr(`"path":""`), false, ErrMalformed, nil},
		{"bank path NUL", RouteBank, hdr(`"path":"a\u0000b"`), false, ErrMalformed, nil},
		{"bank loading disabled", RouteBank, hdr(`"path":"x.npz"`), false, ErrOutOfRange, noBanks},
		{"recall without reward", RouteRecall, hdr(""), false, ErrMalformed, nil},
		{"recall empty reward", RouteRecall, hdr(`"reward":{}`), false, ErrMalformed, nil},
		{"recall reward not an object", RouteRecall, hdr(`"reward":[1,2]`), false, ErrMalformed, nil},
		{"recall weight a string", RouteRecall, hdr(`"reward":{"a":"1"}`), false, ErrMalformed, nil},
		{"recall weight beyond float64", RouteRecall, hdr(`"reward":{"a":1e999}`), false, ErrMalformed, nil},
		{"recall all weights zero", RouteRecall, hdr(`"reward":{"a":0,"b":0}`), false, ErrOutOfRange, nil},
		{"recall empty element name", RouteRecall, hdr(`"reward":{"":1}`), false, ErrMalformed, nil},
		{"recall element name too long", RouteRecall, hdr(`"reward":{"` + strings.Repeat("x", corebus.MaxElementLength+1) + `":1}`), false, ErrMalformed, nil},
		{"recall too many terms", RouteRecall, hdr(`"reward":{` + manyTerms(corebus.MaxRewardTerms+1) + `}`), false, ErrMalformed, nil},
		{"recall distance zero", RouteRecall, hdr(`"reward":{"a":1},"max_distance":0`), false, ErrOutOfRange, nil},
		{"recall distance negative", RouteRecall, hdr(`"reward":{"a":1},"max_distance":-1`), false, ErrOutOfRange, nil},
		{"recall misspelt field", RouteRecall, hdr(`"rewards":{"a":1}`), false, ErrMalformed, nil},
		{"reply_to wildcard", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":2000,"mode":"stand","reply_to":"ops/#"}`, at(0)), false, ErrMalformed, nil},
		{"reply_to own state", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":2000,"mode":"stand","reply_to":"solo/v1/r1/state/mode"}`, at(0)), false, ErrMalformed, nil},
		{"reply_to own command", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":2000,"mode":"stand","reply_to":"solo/v1/r1/cmd/mode"}`, at(0)), false, ErrMalformed, nil},
		{"reply_to system", RouteMode, fmt.Sprintf(`{"id":"c1","issued_at":%q,"expires_in_ms":2000,"mode":"stand","reply_to":"$SYS/x"}`, at(0)), false, ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			val := v
			if tc.v != nil {
				val = tc.v
			}
			_, err := val.Decode(tc.route, []byte(tc.payload), tc.retained, decodeNow)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode error = %v, want %v", err, tc.want)
			}
			if Code(err) == "rejected" {
				t.Fatalf("error %v has no rejection code", err)
			}
		})
	}
}

// manyTerms is n reward terms "e0":1,"e1":1,...
func manyTerms(n int) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf(`"e%d":1`, i)
	}
	return strings.Join(terms, ",")
}

// A rejected command still names its id and reply_to when they are readable,
// so the operator gets an answer.
func TestDecodeRejectionKeepsReturnAddress(t *testing.T) {
	v := testValidator(t)
	for _, tc := range []struct {
		name, payload, id, replyTo string
	}{
		{"expired", fmt.Sprintf(`{"id":"c9","issued_at":%q,"expires_in_ms":10,"reply_to":"ops/bob","mode":"run"}`, at(-time.Hour)), "c9", "ops/bob"},
		{"unknown field", `{"id":"c9","reply_to":"ops/bob","bogus":1}`, "c9", "ops/bob"},
		{"bad issued_at", `{"id":"c9","reply_to":"ops/bob","issued_at":"yesterday"}`, "c9", "ops/bob"},
		{"spoofing reply_to is not answered", `{"id":"c9","reply_to":"solo/v1/r1/events"}`, "c9", ""},
		{"bad id is not echoed", `{"id":"c 9","reply_to":"ops/bob"}`, "", "ops/bob"},
		{"not json", `{"id":"c9",`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Decode(RouteMode, []byte(tc.payload), false, decodeNow)
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			if c.ID != tc.id || c.ReplyTo != tc.replyTo {
				t.Fatalf("id %q reply_to %q, want %q %q", c.ID, c.ReplyTo, tc.id, tc.replyTo)
			}
		})
	}
}

func TestNewTopicsValidatesRobotID(t *testing.T) {
	for id, ok := range map[string]bool{"r1": true, "solo-12-a": true, "": false, "R1": false, "r_1": false, "r/1": false, "r+": false, strings.Repeat("a", 65): false} {
		_, err := NewTopics(id)
		if (err == nil) != ok {
			t.Errorf("NewTopics(%q) error = %v, want ok=%v", id, err, ok)
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	routes := []string{RouteSkill, RouteMode, RouteEStop, RouteEStopClear, RouteVelocity, RouteGoal, RouteBank, RouteHeartbeat, "bogus", RouteRecall}
	for i, p := range []string{
		hdr(`"select":{"index":1}`), hdr(`"mode":"run"`), hdr(""), hdr(""),
		fmt.Sprintf(`{"vx":0.5,"vy":0,"yaw_rate":0.1,"issued_at":%q}`, at(0)),
		hdr(`"x":1,"y":2,"yaw":0.5`), hdr(`"path":"a.npz"`), fmt.Sprintf(`{"issued_at":%q}`, at(0)), `{}`,
	} {
		f.Add(uint8(i), []byte(p), false)
	}
	f.Add(uint8(0), []byte(hdr(`"select":{"latent":[1,2,3,4]}`)), false)
	f.Add(uint8(9), []byte(hdr(`"reward":{"base_lin_vel.x":1,"joint_pos.FL_KFE":-0.5},"max_distance":0.3`)), false)
	f.Add(uint8(0), []byte(hdr(`"select":{"tag":"walk"}`)), true)
	f.Add(uint8(1), []byte(`{"id":"x","issued_at":"2025-06-01T12:00:00Z","expires_in_ms":-5}`), false)
	v := testValidator(f)
	f.Fuzz(func(t *testing.T, route uint8, payload []byte, retained bool) {
		c, err := v.Decode(routes[int(route)%len(routes)], payload, retained, decodeNow)
		if err != nil {
			if Code(err) == "rejected" {
				t.Fatalf("rejection without a reason code: %v", err)
			}
			return
		}
		if c.Kind == corebus.KindNone || c.IssuedAt.IsZero() || c.Lifetime <= 0 || c.Lifetime > v.Limits.MaxLifetime+v.Limits.MaxClockSkew {
			t.Fatalf("accepted a bad command %+v", c)
		}
		finiteWithin := func(x, limit float64) bool { return !math.IsNaN(x) && math.Abs(x) <= limit }
		switch c.Kind {
		case corebus.KindVelocity:
			if !finiteWithin(c.Velocity.Vx, v.Limits.MaxVx) || !finiteWithin(c.Velocity.Vy, v.Limits.MaxVy) || !finiteWithin(c.Velocity.YawRate, v.Limits.MaxYawRate) {
				t.Fatalf("velocity out of range accepted: %+v", c.Velocity)
			}
		case corebus.KindGoal:
			if !finiteWithin(c.Goal.X, v.Limits.MaxGoalDistance) || !finiteWithin(c.Goal.Y, v.Limits.MaxGoalDistance) || !finiteWithin(c.Goal.Yaw, math.Pi) {
				t.Fatalf("goal out of range accepted: %+v", c.Goal)
			}
		case corebus.KindSkill:
			if c.Skill.By == corebus.SelectByLatent {
				if len(c.Skill.Latent) != 4 {
					t.Fatalf("latent of %d accepted", len(c.Skill.Latent))
				}
			} else if c.Skill.Index < 0 || c.Skill.Index > 2 {
				t.Fatalf("skill index %d accepted", c.Skill.Index)
			}
		case corebus.KindMode:
			if c.Mode < corebus.ModeStop || c.Mode > corebus.ModeRun {
				t.Fatalf("mode %v accepted", c.Mode)
			}
		case corebus.KindRecall:
			r := c.Recall
			if len(r.Reward) == 0 || len(r.Reward) > corebus.MaxRewardTerms || r.MaxDistance < 0 || math.IsInf(r.MaxDistance, 0) {
				t.Fatalf("recall accepted: %+v", r)
			}
			for _, term := range r.Reward {
				if term.Element == "" || !finiteWithin(term.Weight, math.MaxFloat64) {
					t.Fatalf("reward term accepted: %+v", term)
				}
			}
		case corebus.KindBank:
			if !strings.HasPrefix(c.BankPath, "/banks/") || strings.Contains(c.BankPath, "..") {
				t.Fatalf("bank path %q accepted", c.BankPath)
			}
		}
	})
}

func BenchmarkDecodeCommand(b *testing.B) {
	v := testValidator(b)
	payload := []byte(hdr(`"select":{"name":"pace"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Decode(RouteSkill, payload, false, decodeNow); err != nil {
			b.Fatal(err)
		}
	}
}
