// Package replay owns re-running the runtime core on a flight recording: it rebuilds the core
// from the recording's config (runtime/app.NewCore), feeds it every recorded tick's sensor
// payload and other inputs (time, flags, slider state, perception, the operator commands the
// live core applied), and compares the command it produces with the command that went on the
// wire, byte for byte. The first difference is reported with the tick, the field and both
// values; an identical replay proves that the deployed core's behaviour is reproducible from
// the recording alone, and a difference pinpoints where a changed core or bank departs from it.
//
// Bank loads at run time are not replayed (the core loads them off the control thread): a
// recording with one replays faithfully up to the swap.
package replay

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/dualforce/dualforce/hw/proto"
	"github.com/dualforce/dualforce/runtime/app"
	"github.com/dualforce/dualforce/runtime/config"
	"github.com/dualforce/dualforce/runtime/core"
	"github.com/dualforce/dualforce/runtime/recorder"
)

// Divergence is the first tick at which the replayed command differs from the recorded one.
type Divergence struct {
	Tick               uint64
	Offset             int    // byte offset in the 172-byte command payload
	Field              string // e.g. "driver 2 motor 1 kp"
	Recorded, Replayed proto.Command
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("replay: tick %d: %s differs (byte %d of the command payload)", d.Tick, d.Field, d.Offset)
}

// Result summarises a replay.
type Result struct {
	Ticks      uint64 // ticks replayed
	Compared   uint64 // ticks whose command was compared
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
}

// Run replays the recordings in files, which must be consecutive files of one run, the first
// starting at power-on.
func Run(files []string, opts Options) (*Result, error) {
	if len(files) == 0 {
		return nil, errors.New("replay: no recording")
	}
	res := &Result{}
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
				res.Divergence = &Divergence{Tick: t.Index, Field: "a non-finite value", Recorded: recorded, Replayed: out.Command}
				r.Close()
				return res, nil
			}
			res.Compared++
			for i := range payload {
				if payload[i] != t.Command[i] {
					res.Divergence = &Divergence{Tick: t.Index, Offset: i, Field: fieldAt(i), Recorded: recorded, Replayed: out.Command}
					r.Close()
					return res, nil
				}
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

// fieldAt names the command field at byte offset i of the payload.
func fieldAt(i int) string {
	switch {
	case i < 2:
		return "session id"
	case i >= proto.CommandLen-2:
		return "command index"
	}
	d, o := (i-2)/28, (i-2)%28
	name := func(base, size int, what string) string {
		return fmt.Sprintf("driver %d motor %d %s", d, (o-base)/size, what)
	}
	switch {
	case o < 2:
		return fmt.Sprintf("driver %d mode", d)
	case o < 10:
		return name(2, 4, "position_ref")
	case o < 14:
		return name(10, 2, "velocity_ref")
	case o < 18:
		return name(14, 2, "current_ref")
	case o < 22:
		return name(18, 2, "kp")
	case o < 26:
		return name(22, 2, "kd")
	}
	return name(26, 1, "i_sat")
}
