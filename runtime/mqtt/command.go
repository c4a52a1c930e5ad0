package mqtt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dualforce/dualforce/runtime/corebus"
)

// MaxPayload is the largest command payload accepted (a 128-wide latent in
// JSON takes about 3 KiB).
const MaxPayload = 16 << 10

// Limits bound what a command may ask for. A command beyond them is rejected
// with ErrOutOfRange.
type Limits struct {
	MaxVx, MaxVy    float64       // |vx|, |vy| in m/s
	MaxYawRate      float64       // |yaw_rate| in rad/s
	MaxGoalDistance float64       // |x|, |y| of a goal in m
	MaxLifetime     time.Duration // the longest expires_in_ms accepted
	// MaxClockSkew is how far ahead of the robot's clock issued_at may be:
	// operator and robot clocks are never exactly in step.
	MaxClockSkew time.Duration
	// StreamLifetime is the lifetime of a velocity or heartbeat message
	// that does not say expires_in_ms.
	StreamLifetime time.Duration
}

// DefaultLimits suit Solo12 on flat ground.
func DefaultLimits() Limits {
	return Limits{
		MaxVx: 1.0, MaxVy: 0.5, MaxYawRate: 1.5,
		MaxGoalDistance: 50,
		MaxLifetime:     time.Minute,
		MaxClockSkew:    2 * time.Second,
		StreamLifetime:  500 * time.Millisecond,
	}
}

func (l Limits) check() error {
	for _, v := range []float64{l.MaxVx, l.MaxVy, l.MaxYawRate, l.MaxGoalDistance,
		float64(l.MaxLifetime), float64(l.MaxClockSkew), float64(l.StreamLifetime)} {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: every limit must be positive and finite: %+v", ErrConfig, l)
		}
	}
	return nil
}

// Header is what every command payload may carry.
type Header struct {
	ID          string     `json:"id,omitempty"`
	IssuedAt    *time.Time `json:"issued_at,omitempty"`
	ExpiresInMS *int64     `json:"expires_in_ms,omitempty"`
	ReplyTo     string     `json:"reply_to,omitempty"`
}

// SkillSelector names a skill in exactly one way.
type SkillSelector struct {
	Index  *int      `json:"index,omitempty"`
	Name   *string   `json:"name,omitempty"`
	Tag    *string   `json:"tag,omitempty"`
	Latent []float32 `json:"latent,omitempty"`
}

// Payloads of the command routes.
type (
	skillPayload struct {
		Header
		Select *SkillSelector `json:"select"`
	}
	modePayload struct {
		Header
		Mode string `json:"mode"`
	}
	velocityPayload struct {
		Header
		Vx      *float64 `json:"vx"`
		Vy      *float64 `json:"vy"`
		YawRate *float64 `json:"yaw_rate"`
	}
	goalPayload struct {
		Header
		X   *float64 `json:"x"`
		Y   *float64 `json:"y"`
		Yaw *float64 `json:"yaw"`
	}
	bankPayload struct {
		Header
		Path string `json:"path"`
	}
	recallPayload struct {
		Header
		Reward      map[string]float64 `json:"reward"`
		MaxDistance *float64           `json:"max_distance,omitempty"`
	}
)

// routeKinds maps each command route to the kind it carries and whether the
// payload must carry an id and expires_in_ms (the streamed velocity and
// heartbeat messages need neither).
var routeKinds = map[string]struct {
	kind   corebus.Kind
	stream bool
}{
	RouteSkill:      {corebus.KindSkill, false},
	RouteMode:       {corebus.KindMode, false},
	RouteEStop:      {corebus.KindEStop, false},
	RouteEStopClear: {corebus.KindEStopClear, false},
	RouteVelocity:   {corebus.KindVelocity, true},
	RouteGoal:       {corebus.KindGoal, false},
	RouteBank:       {corebus.KindBank, false},
	RouteHeartbeat:  {corebus.KindHeartbeat, true},
	RouteRecall:     {corebus.KindRecall, false},
}

// Validator turns command payloads into validated commands.
type Validator struct {
	Topics    Topics
	Limits    Limits
	Catalogue SkillCatalogue
	// BankDir is the only directory banks may be loaded from; empty
	// disables cmd/bank.
	BankDir string
}

// Decode validates the payload of command route (the topic after
// "<prefix>cmd/") received at now. On error the command is rejected and
// changes nothing; its ID and ReplyTo are still set when they could be read,
// so the rejection can be answered.
func (v *Validator) Decode(route string, payload []byte, retained bool, now time.Time) (corebus.Command, error) {
	var cmd corebus.Command
	if len(payload) > MaxPayload {
		return cmd, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrMalformed, len(payload), MaxPayload)
	}
	v.readReturnAddress(payload, &cmd)
	rk, ok := routeKinds[route]
	if !ok {
		return cmd, fmt.Errorf("%w: cmd/%s", ErrUnknownCommand, route)
	}
	cmd.Kind = rk.kind
	if retained {
		return cmd, fmt.Errorf("%w: commands must never be published retained", ErrRetained)
	}
	var err error
	switch rk.kind {
	case corebus.KindSkill:
		var p skillPayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			cmd.Skill, err = v.selection(p.Select)
		}
	case corebus.KindMode:
		var p modePayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			var known bool
			if cmd.Mode, known = corebus.ParseMode(p.Mode); !known {
				err = fmt.Errorf("%w: mode %q is not stand, run, damp or stop", ErrOutOfRange, p.Mode)
			}
		}
	case corebus.KindVelocity:
		var p velocityPayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			err = errors.Join(
				bounded("vx", p.Vx, v.Limits.MaxVx, &cmd.Velocity.Vx),
				bounded("vy", p.Vy, v.Limits.MaxVy, &cmd.Velocity.Vy),
				bounded("yaw_rate", p.YawRate, v.Limits.MaxYawRate, &cmd.Velocity.YawRate))
		}
	case corebus.KindGoal:
		var p goalPayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			err = errors.Join(
				bounded("x", p.X, v.Limits.MaxGoalDistance, &cmd.Goal.X),
				bounded("y", p.Y, v.Limits.MaxGoalDistance, &cmd.Goal.Y),
				bounded("yaw", p.Yaw, math.Pi, &cmd.Goal.Yaw))
		}
	case corebus.KindBank:
		var p bankPayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			cmd.BankPath, err = v.bankPath(p.Path)
		}
	case corebus.KindRecall:
		var p recallPayload
		if err = decodeStrict(payload, &p); err == nil {
			err = v.header(&cmd, &p.Header, rk.stream, now)
		}
		if err == nil {
			cmd.Recall, err = recall(&p)
		}
	default: // estop, estop/clear and heartbeat carry nothing but the header
		var h Header
		if err = decodeStrict(payload, &h); err == nil {
			err = v.header(&cmd, &h, rk.stream, now)
		}
	}
	return cmd, err
}

// readReturnAddress reads id and reply_to leniently, ignoring every other
// field and every error, so that even a malformed command can be answered.
func (v *Validator) readReturnAddress(payload []byte, cmd *corebus.Command) {
	var ra struct {
		ID      any `json:"id"`
		ReplyTo any `json:"reply_to"`
	}
	if json.Unmarshal(payload, &ra) != nil {
		return
	}
	if id, ok := ra.ID.(string); ok && checkID(id) == nil {
		cmd.ID = id
	}
	if to, ok := ra.ReplyTo.(string); ok && v.Topics.checkReplyTo(to) == nil {
		cmd.ReplyTo = to
	}
}

// decodeStrict decodes exactly one JSON object with no unknown fields: a
// misspelt field of a motion command must not silently become zero.
func decodeStrict(payload []byte, dst any) error {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("%w: payload is not a JSON object", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	return nil
}

// header checks the fields every command shares and copies them into cmd.
func (v *Validator) header(cmd *corebus.Command, h *Header, stream bool, now time.Time) error {
	if h.ID != "" || !stream {
		if err := checkID(h.ID); err != nil {
			return err
		}
	}
	cmd.ID = h.ID
	if h.ReplyTo != "" {
		if err := v.Topics.checkReplyTo(h.ReplyTo); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	cmd.ReplyTo = h.ReplyTo
	if h.IssuedAt == nil {
		return fmt.Errorf("%w: issued_at (RFC 3339 time) is missing", ErrMalformed)
	}
	cmd.IssuedAt = *h.IssuedAt
	lifetime := v.Limits.StreamLifetime
	switch {
	case h.ExpiresInMS != nil:
		ms := *h.ExpiresInMS
		if ms <= 0 || ms > v.Limits.MaxLifetime.Milliseconds() {
			return fmt.Errorf("%w: expires_in_ms %d is not in 1..%d", ErrOutOfRange, ms, v.Limits.MaxLifetime.Milliseconds())
		}
		lifetime = time.Duration(ms) * time.Millisecond
	case !stream:
		return fmt.Errorf("%w: expires_in_ms is missing", ErrMalformed)
	}
	if ahead := cmd.IssuedAt.Sub(now); ahead > v.Limits.MaxClockSkew {
		return fmt.Errorf("%w: issued_at is %v ahead of the robot's clock (more than %v)", ErrOutOfRange, ahead, v.Limits.MaxClockSkew)
	}
	expiry := cmd.IssuedAt.Add(lifetime)
	if !now.Before(expiry) {
		return fmt.Errorf("%w: issued at %s, valid for %v, received %v after expiry", ErrExpired,
			cmd.IssuedAt.Format(time.RFC3339Nano), lifetime, now.Sub(expiry))
	}
	cmd.Lifetime = expiry.Sub(now)
	return nil
}

// checkID accepts 1 to 64 characters from [A-Za-z0-9._:-] (UUIDs, ULIDs,
// counters): ids end up in logs and event payloads.
func checkID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("%w: id must be 1 to 64 characters", ErrMalformed)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && !strings.ContainsRune("._:-", rune(c)) {
			return fmt.Errorf("%w: id may only hold letters, digits and ._:-", ErrMalformed)
		}
	}
	return nil
}

// bounded checks that a required number is present, finite and within
// [-limit, limit], and stores it.
func bounded(name string, value *float64, limit float64, dst *float64) error {
	switch {
	case value == nil:
		return fmt.Errorf("%w: %s is missing", ErrMalformed, name)
	case math.IsNaN(*value) || math.Abs(*value) > limit:
		return fmt.Errorf("%w: %s %v is outside ±%v", ErrOutOfRange, name, *value, limit)
	}
	*dst = *value
	return nil
}

// selection resolves a skill selector against the current catalogue.
func (v *Validator) selection(sel *SkillSelector) (corebus.SkillSelection, error) {
	var out corebus.SkillSelection
	if sel == nil {
		return out, fmt.Errorf("%w: select is missing", ErrMalformed)
	}
	ways := 0
	for _, set := range []bool{sel.Index != nil, sel.Name != nil, sel.Tag != nil, sel.Latent != nil} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return out, fmt.Errorf("%w: select needs exactly one of index, name, tag, latent (got %d)", ErrMalformed, ways)
	}
	cat := v.Catalogue.Catalogue()
	if cat == nil {
		return out, fmt.Errorf("%w: no skill bank is loaded", ErrUnknownSkill)
	}
	out.Generation = cat.Generation
	out.Index = -1
	switch {
	case sel.Index != nil:
		out.By = corebus.SelectByIndex
		for _, s := range cat.Skills {
			if s.Index == *sel.Index {
				out.Index = s.Index
			}
		}
		if out.Index < 0 {
			return out, fmt.Errorf("%w: index %d is not in bank %q", ErrUnknownSkill, *sel.Index, cat.Path)
		}
	case sel.Name != nil:
		out.By = corebus.SelectByName
		for _, s := range cat.Skills {
			if s.Name == *sel.Name {
				out.Index = s.Index
				break
			}
		}
		if out.Index < 0 {
			return out, fmt.Errorf("%w: no skill named %q in bank %q", ErrUnknownSkill, *sel.Name, cat.Path)
		}
	case sel.Tag != nil:
		// The lowest-index skill carrying the tag: deterministic, and the
		// order the bank lists its skills in.
		out.By = corebus.SelectByTag
		for _, s := range cat.Skills {
			if out.Index < 0 && slices.Contains(s.Tags, *sel.Tag) {
				out.Index = s.Index
			}
		}
		if out.Index < 0 {
			return out, fmt.Errorf("%w: no skill tagged %q in bank %q", ErrUnknownSkill, *sel.Tag, cat.Path)
		}
	default:
		out.By = corebus.SelectByLatent
		if len(sel.Latent) != cat.LatentDim {
			return out, fmt.Errorf("%w: latent has %d values, the bank's skills take %d", ErrOutOfRange, len(sel.Latent), cat.LatentDim)
		}
		for i, z := range sel.Latent {
			if f := float64(z); math.IsNaN(f) || math.IsInf(f, 0) {
				return out, fmt.Errorf("%w: latent[%d] is not finite", ErrOutOfRange, i)
			}
		}
		out.Latent = sel.Latent
	}
	return out, nil
}

// recall checks a reward: 1 to corebus.MaxRewardTerms named elements with finite weights, not
// all zero, and an optional positive max_distance. The core resolves the names against the
// running bank's observation and refuses the ones it does not have.
func recall(p *recallPayload) (corebus.Recall, error) {
	var out corebus.Recall
	if len(p.Reward) == 0 || len(p.Reward) > corebus.MaxRewardTerms {
		return out, fmt.Errorf("%w: reward needs 1 to %d weights on named observation elements, got %d", ErrMalformed, corebus.MaxRewardTerms, len(p.Reward))
	}
	nonZero := false
	for _, name := range slices.Sorted(maps.Keys(p.Reward)) {
		w := p.Reward[name]
		switch {
		case name == "" || len(name) > corebus.MaxElementLength:
			return out, fmt.Errorf("%w: reward element names are 1 to %d characters", ErrMalformed, corebus.MaxElementLength)
		case math.IsNaN(w) || math.IsInf(w, 0):
			return out, fmt.Errorf("%w: reward weight of %q is not finite", ErrOutOfRange, name)
		}
		nonZero = nonZero || w != 0
		out.Reward = append(out.Reward, corebus.RewardTerm{Element: name, Weight: w})
	}
	if !nonZero {
		return out, fmt.Errorf("%w: every reward weight is zero: every skill serves it alike", ErrOutOfRange)
	}
	if d := p.MaxDistance; d != nil {
		if !(*d > 0) || math.IsInf(*d, 0) {
			return out, fmt.Errorf("%w: max_distance %v must be positive and finite", ErrOutOfRange, *d)
		}
		out.MaxDistance = *d
	}
	return out, nil
}

// bankPath accepts a bank file inside BankDir, given relative to it or as an
// absolute path, and returns it absolute and clean. Banks come from one
// directory only so that a command cannot make the robot read any file.
func (v *Validator) bankPath(path string) (string, error) {
	if v.BankDir == "" {
		return "", fmt.Errorf("%w: bank loading is disabled (no bank directory configured)", ErrOutOfRange)
	}
	if path == "" || strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("%w: path is missing", ErrMalformed)
	}
	rel := path
	if filepath.IsAbs(path) {
		var err error
		if rel, err = filepath.Rel(v.BankDir, filepath.Clean(path)); err != nil {
			return "", fmt.Errorf("%w: path %q is outside the bank directory", ErrOutOfRange, path)
		}
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: path %q is outside the bank directory %q", ErrOutOfRange, path, v.BankDir)
	}
	return filepath.Join(v.BankDir, rel), nil
}
