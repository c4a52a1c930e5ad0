// Package hw is the root of everything that touches the wires between the robot's computer and
// Solo12. It holds no code itself; its subpackages own one concern each:
//
//   - proto: the ODRI master-board protocol v4 codec (frames, payloads, fixed point, mode and
//     status words). Pure functions, no IO, no allocation.
//   - link: transports that move whole frames (raw Ethernet over AF_PACKET, a UDP tunnel on
//     loopback, an in-process pipe), pcap recording and replay.
//   - board: the master-board firmware as an IO-free state machine stepped once per 1 kHz tick,
//     with the motor physics behind a small Plant interface.
//   - host: the host session, what the C SDK does: init until ack, command indexing, sensor
//     validation, timeouts, loss and latency statistics, listener mode.
//   - solo12: the Solo12 joint<->motor map and the index-search calibration step function.
//   - slider: the serial slider box and hardware E-stop.
//   - clock: 1 kHz pacing without time.Ticker (clock_nanosleep plus spin on a locked thread) and
//     allocation-free latency histograms.
//   - perception: the side channel a perception stack feeds the runtime (height map, mocap pose).
//
// Nothing under hw imports any other package of this module.
package hw
