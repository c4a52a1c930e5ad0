// Package proto owns the ODRI master-board wire protocol, version 4: the Ethernet frame around a
// payload, the init, ack, command and sensor payloads, their fixed-point encodings, and the driver
// mode and status words.
//
// All quantities in the Go types are SI units on the motor side of the gear (rad, rad/s, A, A/rad,
// A*s/rad, m/s^2); the conversion to the wire's fixed-point units happens only in Marshal and
// Unmarshal. Encoding saturates exactly like the SDK (never wraps) and reports which fields it had
// to clamp; NaN and Inf are refused before a single byte is written. Decoding tells payloads apart
// by length, detects protocol v3 boards by their payload sizes, and returns typed errors for every
// malformed input. Nothing in this package allocates on success or does IO.
package proto
