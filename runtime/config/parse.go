package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ErrInvalid is wrapped by every error of Parse, Load and Validate about the configuration's
// content (as opposed to failing to read the file).
var ErrInvalid = errors.New("config: invalid")

// Problem is one thing wrong with a configuration.
type Problem struct {
	Path string // dotted key path, e.g. "limits.max_current" or "calibration.offsets[3]"
	Line int    // line in the file, 0 when not known (Validate of a Config built in code)
	Msg  string
}

func (p Problem) String() string {
	switch {
	case p.Path == "" && p.Line == 0:
		return p.Msg
	case p.Line == 0:
		return p.Path + ": " + p.Msg
	case p.Path == "":
		return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
	}
	return fmt.Sprintf("%s (line %d): %s", p.Path, p.Line, p.Msg)
}

// Error lists every problem found; it wraps ErrInvalid.
type Error struct {
	Source   string // file name, "" for bytes
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: invalid")
	if e.Source != "" {
		b.WriteString(" " + e.Source)
	}
	if len(e.Problems) == 1 {
		return b.String() + ": " + e.Problems[0].String()
	}
	b.WriteString(":")
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return ErrInvalid }

// Load reads and parses the configuration file at path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	var e *Error
	if errors.As(err, &e) {
		e.Source = path
	}
	return c, err
}

// Parse decodes a YAML configuration over Default and validates it. An empty document is the
// defaults (which still need robot_id, bank and the transport's address). On error the
// returned Config is the zero value.
func Parse(data []byte) (Config, error) {
	c, root, problems := decode(data)
	if len(problems) == 0 {
		problems = c.problems()
		for i := range problems {
			problems[i].Line = lineOf(root, problems[i].Path)
		}
	}
	if len(problems) > 0 {
		return Config{}, &Error{Problems: problems}
	}
	return c, nil
}

// decode checks the document's shape against Config (keys, kinds of values) for errors that
// name the path, then decodes it strictly over Default.
func decode(data []byte) (Config, *yaml.Node, []Problem) {
	c := Default()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return c, nil, nil
	case err != nil:
		return c, nil, []Problem{{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return c, nil, []Problem{{Line: extra.Line, Msg: "more than one YAML document"}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return c, nil, nil
	}
	root := doc.Content[0]
	var s shapeChecker
	s.check(root, reflect.TypeOf(c), "")
	if len(s.problems) > 0 {
		return c, root, s.problems
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&c); err != nil {
		// The shape check should have caught it; report yaml's words if not.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			var problems []Problem
			for _, msg := range te.Errors {
				problems = append(problems, Problem{Msg: msg})
			}
			return c, root, problems
		}
		return c, root, []Problem{{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	return c, root, nil
}

// lineOf finds the line of the value at a dotted path ("a.b[2]") in a document, 0 if the
// document does not have it (a default value).
func lineOf(root *yaml.Node, path string) int {
	n := root
	for _, part := range strings.Split(path, ".") {
		key, index, _ := strings.Cut(part, "[")
		if n = child(n, key); n == nil {
			return 0
		}
		if index != "" {
			i, err := strconv.Atoi(strings.TrimSuffix(index, "]"))
			if err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return 0
			}
			n = n.Content[i]
		}
	}
	return n.Line
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// shapeChecker walks a YAML node tree alongside the Go type it decodes into.
type shapeChecker struct {
	problems []Problem
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	// secretKey matches keys that would put a secret into the file.
	secretKey = regexp.MustCompile(`(?i)pass|secret|token|user|cred`)
)

func (s *shapeChecker) add(n *yaml.Node, path, format string, args ...any) {
	s.problems = append(s.problems, Problem{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
}

func (s *shapeChecker) check(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		s.add(n, path, "anchors and aliases are not supported: write the value out")
		return
	}
	if t.Kind() == reflect.Pointer {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if _, err := time.ParseDuration(n.Value); n.Kind != yaml.ScalarNode || n.Tag != "!!str" || err != nil {
			s.add(n, path, "want a duration such as 500ms or 2s, got %s", describe(n))
		}
	case t.Kind() == reflect.Struct:
		s.mapping(n, t, path)
	case t.Kind() == reflect.Array:
		if n.Kind != yaml.SequenceNode || len(n.Content) != t.Len() {
			s.add(n, path, "want a list of %d numbers, got %s", t.Len(), describe(n))
			return
		}
		for i, item := range n.Content {
			s.check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			s.add(n, path, "want true or false, got %s", describe(n))
		}
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			s.add(n, path, "want a whole number, got %s", describe(n))
		} else if _, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 32); err != nil {
			s.add(n, path, "whole number %s out of range", n.Value)
		}
	case t.Kind() == reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			s.add(n, path, "want a number, got %s", describe(n))
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			s.add(n, path, "want a string, got %s (quote it)", describe(n))
		}
	}
}

func (s *shapeChecker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return // "limits:" with nothing under it keeps the defaults
		}
		s.add(n, path, "want a mapping of keys, got %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		name := key.Value
		keyPath := join(path, name)
		if key.Kind != yaml.ScalarNode || key.Tag == "!!merge" {
			s.add(key, path, "only plain keys are allowed (no merge keys or complex keys)")
			continue
		}
		if seen[name] {
			s.add(key, keyPath, "key appears twice")
			continue
		}
		seen[name] = true
		field, ok := fieldByTag(t, name)
		if !ok {
			msg := fmt.Sprintf("unknown key; allowed here: %s", strings.Join(tags(t), ", "))
			if secretKey.MatchString(name) {
				msg += "; secrets never go in this file: name a file with mqtt.credentials_file"
			}
			s.add(key, keyPath, "%s", msg)
			continue
		}
		s.check(value, field.Type, keyPath)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("yaml") == tag {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tags(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		names = append(names, t.Field(i).Tag.Get("yaml"))
	}
	return names
}

// describe names what a node holds, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return fmt.Sprintf("a list of %d", len(n.Content))
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), v)
}
