package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/foxglove/mcap/go/mcap"
)

// Topics of a recording.
const (
	TopicSensor      = "/link/sensor"
	TopicCommand     = "/link/command"
	TopicObservation = "/policy/observation"
	TopicAction      = "/policy/action"
	TopicEvents      = "/events"
	TopicInput       = "/runtime/input"
)

// Metadata record names of a recording.
const (
	MetadataStart   = "dualforce.recorder"
	MetadataSummary = "dualforce.recorder.summary"
)

// FormatVersion is written into MetadataStart; the reader refuses other versions.
const FormatVersion = "1"

// wireEncoding is the message encoding of the raw payload channels.
const wireEncoding = "odri.masterboard.v4"

type channelKind uint8

const (
	kindUnknown channelKind = iota
	kindSensor
	kindCommand
	kindObservation
	kindAction
	kindEvents
	kindInput
)

// channelDef is one channel and its schema; the channel and schema IDs are the kind.
type channelDef struct {
	kind           channelKind
	topic          string
	encoding       string
	schemaName     string
	schemaEncoding string
	schema         string
}

var channelDefs = []channelDef{
	{kindSensor, TopicSensor, wireEncoding, "odri.masterboard.v4.Sensor", "text",
		"208-byte ODRI master-board protocol v4 sensor payload as received, little-endian: " +
			"u16 session_id | 6 x 28-byte driver sensor blocks | IMU (accelerometer, gyroscope, " +
			"attitude, linear acceleration: 4 x i16[3]) | power (u16 vbus, i16 vshunt, f32 energy) | " +
			"u16 sensor_index | u16 packet_loss | u16 last_cmd_index. Decoder: hw/proto.Sensor.Unmarshal."},
	{kindCommand, TopicCommand, wireEncoding, "odri.masterboard.v4.Command", "text",
		"172-byte ODRI master-board protocol v4 command payload as sent, little-endian: " +
			"u16 session_id | 6 x 28-byte driver command blocks | u16 command_index. " +
			"Decoder: hw/proto.Command.Unmarshal."},
	{kindObservation, TopicObservation, "json", "dualforce.Observation", "jsonschema", valuesSchema("Policy observation (the bank's layout, normalised input excluded)")},
	{kindAction, TopicAction, "json", "dualforce.Action", "jsonschema", valuesSchema("Policy action, one value in [-1, 1] per joint in project joint order")},
	{kindEvents, TopicEvents, "json", "dualforce.Event", "jsonschema", `{"title":"dualforce.Event","type":"object","properties":{` +
		`"tick":{"type":"integer","description":"link tick"},` +
		`"event":{"type":"object","description":"an event the runtime reported as JSON"},` +
		`"text":{"type":"string","description":"an event the runtime reported as text"}}}`},
	{kindInput, TopicInput, "dualforce.core.input.v1", "dualforce.core.Input", "text",
		"The runtime core's inputs of one tick besides the sensor payload, as runtime/core's " +
			"AppendInputRecord writes them and DecodeInputRecord reads them: time, fresh/overrun flags, " +
			"slider box state, perception on policy ticks, operator commands applied."},
}

func valuesSchema(description string) string {
	return `{"type":"object","description":` + strconv.Quote(description) + `,"properties":{` +
		`"tick":{"type":"integer","description":"link tick"},` +
		`"values":{"type":"array","items":{"type":["number","string"],` +
		`"description":"non-finite values are the strings NaN, +Inf, -Inf"}}}}`
}

func kindOfTopic(topic string) channelKind {
	for _, d := range channelDefs {
		if d.topic == topic {
			return d.kind
		}
	}
	return kindUnknown
}

// appendValues appends {"tick":N,"values":[...]} with float32 values that parse back exactly.
func appendValues(b []byte, tick uint64, values []float32) []byte {
	b = append(b, `{"tick":`...)
	b = strconv.AppendUint(b, tick, 10)
	b = append(b, `,"values":[`...)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		switch f := float64(v); {
		case math.IsNaN(f):
			b = append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			b = append(b, `"+Inf"`...)
		case math.IsInf(f, -1):
			b = append(b, `"-Inf"`...)
		default:
			b = strconv.AppendFloat(b, f, 'g', -1, 32)
		}
	}
	return append(b, "]}"...)
}

// appendEvent appends the message for one event line: the line itself when it is a JSON
// object, else the line as text.
func appendEvent(b []byte, tick uint64, line []byte) []byte {
	b = append(b, `{"tick":`...)
	b = strconv.AppendUint(b, tick, 10)
	if line[0] == '{' && json.Valid(line) {
		b = append(b, `,"event":`...)
		b = append(b, line...)
	} else {
		text, _ := json.Marshal(string(line)) // a string always marshals
		b = append(b, `,"text":`...)
		b = append(b, text...)
	}
	return append(b, '}')
}

// eventLines calls f with every non-blank line of events, surrounding white space removed.
func eventLines(events []byte, f func(line []byte) error) error {
	for len(events) > 0 {
		line, rest, _ := bytes.Cut(events, []byte{'\n'})
		events = rest
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if err := f(line); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFloat is a float32 that also accepts the strings appendValues writes for non-finite values.
type jsonFloat float32

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = jsonFloat(math.NaN())
	case `"+Inf"`:
		*f = jsonFloat(math.Inf(1))
	case `"-Inf"`:
		*f = jsonFloat(math.Inf(-1))
	default:
		v, err := strconv.ParseFloat(string(b), 32)
		if err != nil {
			return fmt.Errorf("value %.20q is not a float32", b)
		}
		*f = jsonFloat(v)
	}
	return nil
}

type valuesMessage struct {
	Tick   uint64      `json:"tick"`
	Values []jsonFloat `json:"values"`
}

type eventMessage struct {
	Tick  uint64          `json:"tick"`
	Event json.RawMessage `json:"event"`
	Text  *string         `json:"text"`
}

// decodeValues appends the values of a values message to dst.
func decodeValues(dst []float32, data []byte) ([]float32, error) {
	var m valuesMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return dst, err
	}
	for _, v := range m.Values {
		dst = append(dst, float32(v))
	}
	return dst, nil
}

// decodeEvent appends the event line of an events message, ended by '\n', to dst.
func decodeEvent(dst, data []byte) ([]byte, error) {
	var m eventMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return dst, err
	}
	switch {
	case len(m.Event) > 0 && m.Text == nil:
		dst = append(dst, m.Event...)
	case len(m.Event) == 0 && m.Text != nil:
		dst = append(dst, *m.Text...)
	default:
		return dst, errors.New("event message needs exactly one of event and text")
	}
	return append(dst, '\n'), nil
}

// schemaRecord and channelRecord build the MCAP records of d.
func (d channelDef) schemaRecord() *mcap.Schema {
	return &mcap.Schema{ID: uint16(d.kind), Name: d.schemaName, Encoding: d.schemaEncoding, Data: []byte(d.schema)}
}

func (d channelDef) channelRecord() *mcap.Channel {
	return &mcap.Channel{ID: uint16(d.kind), SchemaID: uint16(d.kind), Topic: d.topic, MessageEncoding: d.encoding}
}
