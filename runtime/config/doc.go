// Package config owns the on-robot runtime's configuration file: its YAML schema, the
// defaults, strict parsing (unknown keys, wrong types and out-of-range values are errors that
// name the key's path, its line and the allowed range) and the checks across fields.
//
// Secrets never appear in the file: the MQTT section names a credentials file, and a key such
// as "password" is refused with a pointer to it. Validation is pure: it reads no file and
// opens no device, so the same checks run in tests and at start-up.
//
// Example is an annotated configuration (testdata/example.yaml) that a command's --help can
// print; Default returns the values a key takes when the file leaves it out.
package config
