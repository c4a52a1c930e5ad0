// Package slider owns the serial slider box: an Arduino on USB-CDC (/dev/ttyACM*, 115200 8N1)
// that streams `<estop> <a0> <a1> [<a2> <a3>]\r\n` about every 0.5 ms, carrying the hardware
// E-stop button and two or four 10-bit slider potentiometers.
//
// ParseLine decodes one line without allocating and reports malformed input as *LineError values
// wrapping ErrMalformed. A Box reads the stream on its own goroutine, keeps the newest reading,
// counts good and garbage lines, latches the E-stop until an explicit ResetEStop while the button
// reports released, and publishes all of it through Snapshot, which the control loop may call at
// any rate without blocking or allocating. Staleness is judged against the time the caller passes
// in, so a deterministic control core can own its clock. Open configures the port through
// github.com/goburrow/serial (parity, data bits, stop bits and baud set explicitly: the library
// defaults to Even parity at 19200) and can find the box among several candidate devices.
//
// Nothing is ever written to the box; it has no command channel.
package slider
