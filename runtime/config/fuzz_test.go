package config

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse: any input either parses to a valid configuration that survives a YAML round trip,
// or is refused with a config error; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(Example))
	f.Add([]byte(minimal + "limits: {max_current: .nan}\ncalibration: {offsets: [1,2]}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("robot_id: !!binary aGVsbG8=\n"))
	f.Add([]byte("{robot_id: x, bank: y, transport: {kind: udp, addr: '[::1]:7'}, rates: {policy_hz: 40}}"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
	})
}
