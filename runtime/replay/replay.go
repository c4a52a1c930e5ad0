// Package replay owns re-running the runtime core on a flight recording: it rebuilds the core
// from the recording's config (runtime/app.NewCore), feeds it every recorded tick's sensor
// payload and other inputs (time, flags, slider state, perception, the operator commands the
// live core applied), and compares the command it produces with the command that went on the
// wire. An identical replay proves that the deployed core's behaviour is reproducible from the
// recording alone, and a difference pinpoints where a changed core or bank departs from it.
//
// Byte-for-byte identity holds on the machine that recorded. Another CPU sums the policy's
// float32 dot products in another order (vek's AVX2 kernels on amd64, a Go loop with fused
// multiply-adds on arm64), which moves the policy's action in its last bits and a joint target
// by a few wire steps. Options.Tolerance tells that rounding apart from a logic divergence: a
// command whose references and gains all lie within it of the recorded ones counts as the same
// decision, the replay goes on and reports the largest such difference; a different driver mode
// or a field beyond it is the divergence, reported with the tick, the field and both values.
//
// Bank loads at run time are not replayed (the core loads them off the control thread): a
// recording with one replays faithfully up to the swap.
package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/recorder"
)

// Divergence is the first tick at which the replayed command departs from the recorded one by
// more than the tolerance: a logic divergence.
type Divergence struct {
	Tick uint64
	// Field is the first field beyond the tolerance, e.g. "driver 2 motor 1 kp" ("a non-finite
	// value" when the replayed command could not be encoded).
	Field string
	// Offset is the field's first byte in the 172-byte command payload.
	Offset int
	// Difference is |replayed - recorded| in the field's unit; +Inf for a driver mode.
	Difference         float64
	Recorded, Replayed proto.Command
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("replay: tick %d: %s differs by %.3g (byte %d of the command payload)", d.Tick, d.Field, d.Difference, d.Offset)
}

// Difference is one field's departure of a replayed command from the recorded one, in the
// field's unit (rad, rad/s, A, A/rad, A*s/rad on the motor side).
type Difference struct {
	Tick               uint64
	Field              string
	Recorded, Replayed float64
}

// Abs is |Replayed - Recorded|.
func (d Difference) Abs() float64 { return math.Abs(d.Replayed - d.Recorded) }

// Result summarises a replay.
type Result struct {
	Ticks     uint64 // ticks replayed
	Compared  uint64 // ticks whose command was compared
	Identical uint64 // compared commands identical byte for byte
	// Largest is the largest difference of any command within the tolerance (nil when every
	// compared command was identical); Tolerance is the tolerance the replay used.
	Largest    *Difference
	Tolerance  float64
	Divergence *Divergence
}

// ErrGap reports a recording that misses ticks (the recorder dropped them under a slow disk):
// the core's state cannot be followed past it.
var ErrGap = errors.New("replay: the recording has a gap")

// ErrNoInput reports a recording made without the core's input records (an older format).
var ErrNoInput = errors.New("replay: recording has no input records")

// Options adjust a replay.
type Options struct {
	// Bank, when set, replaces the bank path the recording names (a moved file, or another
	// bank to compare against the recorded behaviour).
	Bank string
	// Tolerance is the largest difference of a reference or gain, in the field's unit, that
	// counts as float rounding rather than a divergence; 0 demands byte-for-byte identity.
	Tolerance float64
}

// DefaultTolerance is skillrt replay's tolerance: 1e-3 in each field's unit on the motor side,
// 1.1e-4 rad at a joint behind the 9:1 gear. Float32 rounding moves a joint target by about
// 1e-6 rad; any other decision of the core (a mode, a skill, a fault, a gain) moves a command
// by far more.
const DefaultTolerance = 1e-3

// Run replays the recordings in files, which must be consecutive files of one run, the first
// starting at power-on.
func Run(files []string, opts Options) (*Result, error) {
	if len(files) == 0 {
		return nil, errors.New("replay: no recording")
	}
	if !(opts.Tolerance >= 0) || math.IsInf(opts.Tolerance, 0) {
		return nil, fmt.Errorf("replay: tolerance %v: want a finite value >= 0", opts.Tolerance)
	}
	res := &Result{Tolerance: opts.Tolerance}
	var (
		c         *core.Core
		rec       core.InputRecord
		sensor    proto.Sensor
		haveSens  bool
		out       core.Output
		payload   [proto.CommandLen]byte
		lastIndex uint64
		started   bool
	)
	for _, file := range files {
		r, err := recorder.Open(file)
		if err != nil {
			return res, err
		}
		for {
			t, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return res, err
			}
			if c == nil {
				if c, err = coreFor(r.Metadata(), opts); err != nil {
					r.Close()
					return res, err
				}
			}
			if started && t.Index != lastIndex+1 {
				r.Close()
				return res, fmt.Errorf("%w: tick %d follows tick %d in %s", ErrGap, t.Index, lastIndex, file)
			}
			started, lastIndex = true, t.Index
			if len(t.Input) == 0 {
				r.Close()
				return res, fmt.Errorf("%w: tick %d of %s", ErrNoInput, t.Index, file)
			}
			if err := core.DecodeInputRecord(t.Input, &rec); err != nil {
				r.Close()
				return res, fmt.Errorf("replay: tick %d of %s: %w", t.Index, file, err)
			}
			if len(t.Sensor) == proto.SensorLen {
				if err := sensor.Unmarshal(t.Sensor); err != nil {
					r.Close()
					return res, fmt.Errorf("replay: tick %d sensor: %w", t.Index, err)
				}
				haveSens = true
			}
			if haveSens {
				rec.Input.Sensor = &sensor
			}
			for _, cmd := range rec.Commands {
				c.OfferCommand(cmd)
			}
			c.Step(&rec.Input, &out)
			res.Ticks++
			if len(t.Command) != proto.CommandLen {
				continue
			}
			var recorded proto.Command
			if err := recorded.Unmarshal(t.Command); err != nil {
				r.Close()
				return res, fmt.Errorf("replay: tick %d command: %w", t.Index, err)
			}
			// The host session stamps session id and command index; the core leaves them.
			out.Command.SessionID, out.Command.Index = recorded.SessionID, recorded.Index
			if _, err := out.Command.Marshal(payload[:]); err != nil {
				res.Divergence = &Divergence{Tick: t.Index, Field: "a non-finite value", Difference: math.Inf(1), Recorded: recorded, Replayed: out.Command}
				r.Close()
				return res, nil
			}
			res.Compared++
			if bytes.Equal(payload[:], t.Command) {
				res.Identical++
				continue
			}
			// Compare what went on the wire on both sides: the replayed command as the board
			// would read it.
			var replayed proto.Command
			_ = replayed.Unmarshal(payload[:]) // the length is right
			if d := compare(t.Index, &recorded, &replayed, opts.Tolerance, res); d != nil {
				res.Divergence = d
				r.Close()
				return res, nil
			}
		}
		r.Close()
	}
	return res, nil
}

// coreFor rebuilds the core the recording was made with.
func coreFor(meta map[string]map[string]string, opts Options) (*core.Core, error) {
	m := meta[recorder.MetadataStart]
	y, ok := m[app.MetaConfig]
	if !ok {
		return nil, fmt.Errorf("%w: no config in its metadata", ErrNoInput)
	}
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		return nil, fmt.Errorf("replay: the recording's config: %w", err)
	}
	if opts.Bank != "" {
		cfg.Bank = opts.Bank
	}
	autoRun, _ := strconv.ParseBool(m[app.MetaAutoRun])
	skill, _ := strconv.Atoi(m[app.MetaSkill])
	return app.NewCore(cfg, app.Options{AutoRun: autoRun, Skill: skill}, nil)
}

// compare checks a replayed command that is not byte-identical to the recorded one, field by
// field in payload order: it returns the first field beyond tol as the divergence, or records
// the command's largest difference in res when every field is within tol.
func compare(tick uint64, recorded, replayed *proto.Command, tol float64, res *Result) *Divergence {
	var largest Difference
	for d := range recorded.Drivers {
		if recorded.Drivers[d].Mode != replayed.Drivers[d].Mode {
			return &Divergence{Tick: tick, Field: fmt.Sprintf("driver %d mode", d), Offset: driverOffset(d),
				Difference: math.Inf(1), Recorded: *recorded, Replayed: *replayed}
		}
		for f := range motorFields {
			for p := range recorded.Drivers[d].Motor {
				rec, rep := motorFields[f].get(&recorded.Drivers[d].Motor[p]), motorFields[f].get(&replayed.Drivers[d].Motor[p])
				diff := math.Abs(rep - rec)
				if diff == 0 || diff <= largest.Abs() && diff <= tol {
					continue
				}
				name := fmt.Sprintf("driver %d motor %d %s", d, p, motorFields[f].name)
				if diff > tol {
					return &Divergence{Tick: tick, Field: name, Offset: driverOffset(d) + motorFields[f].offset + p*motorFields[f].size,
						Difference: diff, Recorded: *recorded, Replayed: *replayed}
				}
				largest = Difference{Tick: tick, Field: name, Recorded: rec, Replayed: rep}
			}
		}
	}
	if res.Largest == nil || largest.Abs() > res.Largest.Abs() {
		res.Largest = &largest
	}
	return nil
}

// driverOffset is the first byte of driver d's block in the command payload.
func driverOffset(d int) int { return 2 + d*28 }

// motorFields are a motor's command fields in payload order: offset in the driver's block and
// size of the motor-0 value (motor 1's follows it).
var motorFields = [...]struct {
	name         string
	offset, size int
	get          func(*proto.MotorCommand) float64
}{
	{"position_ref", 2, 4, func(m *proto.MotorCommand) float64 { return m.PositionRef }},
	{"velocity_ref", 10, 2, func(m *proto.MotorCommand) float64 { return m.VelocityRef }},
	{"current_ref", 14, 2, func(m *proto.MotorCommand) float64 { return m.CurrentRef }},
	{"kp", 18, 2, func(m *proto.MotorCommand) float64 { return m.Kp }},
	{"kd", 22, 2, func(m *proto.MotorCommand) float64 { return m.Kd }},
	{"i_sat", 26, 1, func(m *proto.MotorCommand) float64 { return m.ISat }},
}
