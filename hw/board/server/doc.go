// Package server runs an emulated master board (a board.Board) on a link.Conn: in real time at
// 1 kHz paced by hw/clock, or in lockstep with the host, one tick per received init or command.
//
// In real time a reader goroutine, locked to its own OS thread, blocks in ReadFrame and puts each
// frame into a fixed single-producer single-consumer ring; the ticking goroutine (a clock.Pacer)
// drains the ring at each tick, hands the payloads to the board, ticks it and sends what it
// returns. Frames arriving between two ticks wait for the next one, as they wait in the
// firmware's mailbox. Nothing allocates per frame or per tick.
package server
