package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dualforce/dualforce/hw/slider"
	"github.com/dualforce/dualforce/runtime/corebus"
)

// The input record is what a Step took besides the sensor packet, so that a flight recording
// lets replay re-run the core tick by tick: version 2, little-endian,
//
//	u8 version | i64 now (ns) | u8 flags | [perception] | u8 n | n x command
//
// flags: 1 fresh sensor, 2 overrun, 4 slider present, 8 slider latched, 16 slider fault,
// 32 perception present (then: u8 valid | f64 x, y, z | f64 yaw | f32 x 121 heights; written
// on policy ticks only, the only ticks that read it). A command is: u8 kind | str id |
// str reply_to | i64 issued_at (unix ns) | i64 lifetime (ns) | u8 select_by | i64 index |
// u64 generation | u16 n + f32 x n latent | u8 mode | f64 vx, vy, yaw_rate | f64 x, y, yaw |
// str bank_path | u8 n + n x (str element | f64 weight) reward | f64 max_distance |
// u16 n + f32 x n recall latent | u64 recall generation, where str is u16 length + bytes.
// Version 1 records (no recall fields) still decode.
const inputRecordVersion = 2

// maxRecordLatent bounds a recorded latent, so a corrupt record cannot make replay allocate much.
const maxRecordLatent = 4096

const (
	inFresh = 1 << iota
	inOverrun
	inSlider
	inSliderLatched
	inSliderFault
	inPerception
)

// AppendInputRecord appends the record of the Step that took in and produced out; it allocates
// nothing when buf has room (recorder.MaxInputBytes covers the largest record).
func (c *Core) AppendInputRecord(buf []byte, in *Input, out *Output) []byte {
	le := binary.LittleEndian
	buf = append(buf, inputRecordVersion)
	buf = le.AppendUint64(buf, uint64(in.Now))
	var flags byte
	if in.Fresh {
		flags |= inFresh
	}
	if in.Overrun {
		flags |= inOverrun
	}
	if s := in.Slider; s != nil {
		flags |= inSlider
		if s.Latched {
			flags |= inSliderLatched
		}
		if s.Fault() {
			flags |= inSliderFault
		}
	}
	withPerception := in.Perception != nil && c.ticks%c.decim == 0
	if withPerception {
		flags |= inPerception
	}
	buf = append(buf, flags)
	if withPerception {
		p := in.Perception
		buf = append(buf, boolByte(p.Valid))
		for _, v := range p.Position {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
		buf = le.AppendUint64(buf, math.Float64bits(p.Yaw))
		for _, h := range p.HeightMap {
			buf = le.AppendUint32(buf, math.Float32bits(h))
		}
	}
	buf = append(buf, byte(len(out.Applied)))
	for i := range out.Applied {
		buf = appendCommand(buf, &out.Applied[i])
	}
	return buf
}

func appendCommand(buf []byte, cmd *corebus.Command) []byte {
	le := binary.LittleEndian
	buf = append(buf, byte(cmd.Kind))
	buf = appendString(buf, cmd.ID)
	buf = appendString(buf, cmd.ReplyTo)
	var issued int64
	if !cmd.IssuedAt.IsZero() {
		issued = cmd.IssuedAt.UnixNano()
	}
	buf = le.AppendUint64(buf, uint64(issued))
	buf = le.AppendUint64(buf, uint64(cmd.Lifetime))
	buf = append(buf, byte(cmd.Skill.By))
	buf = le.AppendUint64(buf, uint64(int64(cmd.Skill.Index)))
	buf = le.AppendUint64(buf, cmd.Skill.Generation)
	buf = appendLatent(buf, cmd.Skill.Latent)
	buf = append(buf, byte(cmd.Mode))
	for _, v := range [...]float64{cmd.Velocity.Vx, cmd.Velocity.Vy, cmd.Velocity.YawRate, cmd.Goal.X, cmd.Goal.Y, cmd.Goal.Yaw} {
		buf = le.AppendUint64(buf, math.Float64bits(v))
	}
	buf = appendString(buf, cmd.BankPath)
	buf = append(buf, byte(len(cmd.Recall.Reward)))
	for _, term := range cmd.Recall.Reward {
		buf = appendString(buf, term.Element)
		buf = le.AppendUint64(buf, math.Float64bits(term.Weight))
	}
	buf = le.AppendUint64(buf, math.Float64bits(cmd.Recall.MaxDistance))
	buf = appendLatent(buf, cmd.Recall.Latent)
	return le.AppendUint64(buf, cmd.Recall.Generation)
}

func appendLatent(buf []byte, z []float32) []byte {
	le := binary.LittleEndian
	buf = le.AppendUint16(buf, uint16(len(z)))
	for _, v := range z {
		buf = le.AppendUint32(buf, math.Float32bits(v))
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(s)))
	return append(buf, s...)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// ErrInputRecord reports a malformed input record.
var ErrInputRecord = errors.New("core: malformed input record")

// InputRecord is a decoded input record: the Input to step the core with (without the sensor
// packet, which the recording carries on its own) and the commands to offer before the step.
type InputRecord struct {
	Input      Input
	Perception Perception
	Slider     slider.Snapshot
	Commands   []corebus.Command
}

// DecodeInputRecord parses a record written by AppendInputRecord into r, whose Input then points
// at r's own Perception and Slider when the record has them. Errors wrap ErrInputRecord.
func DecodeInputRecord(data []byte, r *InputRecord) error {
	d := decoder{b: data}
	version := d.u8()
	if version != 1 && version != inputRecordVersion {
		if d.err != nil {
			return d.err
		}
		return fmt.Errorf("%w: version %d, want 1 or %d", ErrInputRecord, version, inputRecordVersion)
	}
	r.Input = Input{Now: time.Duration(d.u64())}
	flags := d.u8()
	r.Input.Fresh, r.Input.Overrun = flags&inFresh != 0, flags&inOverrun != 0
	if flags&inSlider != 0 {
		r.Slider = slider.Snapshot{Latched: flags&inSliderLatched != 0, Stale: flags&inSliderFault != 0}
		r.Input.Slider = &r.Slider
	}
	if flags&inPerception != 0 {
		p := &r.Perception
		p.Valid = d.u8() != 0
		for i := range p.Position {
			p.Position[i] = d.f64()
		}
		p.Yaw = d.f64()
		for i := range p.HeightMap {
			p.HeightMap[i] = math.Float32frombits(d.u32())
		}
		r.Input.Perception = p
	}
	r.Commands = r.Commands[:0]
	for n := int(d.u8()); n > 0 && d.err == nil; n-- {
		var cmd corebus.Command
		cmd.Kind = corebus.Kind(d.u8())
		cmd.ID, cmd.ReplyTo = d.str(), d.str()
		if issued := int64(d.u64()); issued != 0 {
			cmd.IssuedAt = time.Unix(0, issued)
		}
		cmd.Lifetime = time.Duration(d.u64())
		cmd.Skill.By = corebus.SelectBy(d.u8())
		cmd.Skill.Index = int(int64(d.u64()))
		cmd.Skill.Generation = d.u64()
		var err error
		if cmd.Skill.Latent, err = d.latent(); err != nil {
			return err
		}
		cmd.Mode = corebus.Mode(d.u8())
		cmd.Velocity = corebus.Velocity{Vx: d.f64(), Vy: d.f64(), YawRate: d.f64()}
		cmd.Goal = corebus.Goal{X: d.f64(), Y: d.f64(), Yaw: d.f64()}
		cmd.BankPath = d.str()
		if version >= 2 {
			if n := int(d.u8()); n > 0 {
				cmd.Recall.Reward = make([]corebus.RewardTerm, n)
				for i := range cmd.Recall.Reward {
					cmd.Recall.Reward[i] = corebus.RewardTerm{Element: d.str(), Weight: d.f64()}
				}
			}
			cmd.Recall.MaxDistance = d.f64()
			if cmd.Recall.Latent, err = d.latent(); err != nil {
				return err
			}
			cmd.Recall.Generation = d.u64()
		}
		r.Commands = append(r.Commands, cmd)
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the record", ErrInputRecord, len(d.b))
	}
	return d.err
}

// decoder reads little-endian fields and remembers the first short read.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: truncated", ErrInputRecord)
		d.b = nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }

func (d *decoder) str() string { return string(d.take(int(d.u16()))) }

// latent reads u16 n + n float32, nil for none.
func (d *decoder) latent() ([]float32, error) {
	n := int(d.u16())
	if n == 0 {
		return nil, nil
	}
	if n > maxRecordLatent || d.err != nil {
		return nil, fmt.Errorf("%w: latent of %d values", ErrInputRecord, n)
	}
	z := make([]float32, n)
	for i := range z {
		z[i] = math.Float32frombits(d.u32())
	}
	return z, nil
}
