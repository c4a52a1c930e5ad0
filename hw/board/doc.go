// Package board owns the ODRI master-board firmware as an IO-free state machine, stepped once per
// 1 kHz tick, and the Plant interface behind which the motor physics live.
//
// A Board is fed each received payload (HandlePayload) and ticked once per millisecond (Tick),
// which advances the plant by 1 ms and returns the payload the board sends that tick: an ack, a
// sensor packet or nothing. The states, timeouts and counters are the firmware's (see
// /work/shared/spec/masterboard.md): WAITING_FOR_INIT, SPI_AUTODETECT, SENDING_INIT_ACK,
// ACTIVE_CONTROL, ERROR and LINK_DOWN; the latest command is held when the PC misses a packet;
// commands of a foreign session are ignored; any init leaves ERROR, whatever its session id (0 and
// the failed session's own included). Sensor packets take the new session id, and restart
// sensor_index and packet_loss, only on entering SENDING_INIT_ACK: during SPI_AUTODETECT they
// continue the previous session's (session 0 after boot).
//
// One known difference: the firmware enters a new state at the tick after the one that decides it
// (its next_state), this board at once. So its watchdogs fire a tick or two earlier than the
// firmware's: after the last command this board drives it for 20 ticks and is in ERROR on the
// 21st, the firmware drives it for 21, sends zero commands on the 22nd and is in ERROR from the
// 23rd; it sends 1001 acks before the ack timeout, the firmware 1002; and of two inits within one
// tick the firmware takes the last, this board the first.
//
// The six motor driver cards are emulated too: enabling a motor runs a rotor alignment before the
// ready bit, each encoder has an index pulse at a configured motor angle (with the optional index
// offset compensation that zeroes the reported position at the first index), a driver-side
// command timeout, and faults can be injected (driver error codes, failed SPI transfers, a frozen
// or not yet started IMU, link loss). Positions the board reports are relative to the encoder's
// power-on angle, or to the index once compensated; the Plant works in absolute motor angles and
// the Board translates between the two.
//
// NewFirstOrderPlant is a small gravity-free plant (rotor inertia and viscous friction) for tests
// and the board emulator; the MuJoCo simulator implements Plant for the whole robot.
//
// Nothing here allocates after construction or does IO; package board/server runs a Board on a
// link in real time.
package board
