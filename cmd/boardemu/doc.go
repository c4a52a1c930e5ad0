// Command boardemu runs an emulated ODRI master board: the firmware's state machine (hw/board)
// with six driver cards and a gravity-free first-order motor plant, served in real time at 1 kHz
// (hw/board/server) on a UDP tunnel or a raw Ethernet interface. Point cmd/linkcheck, or the
// runtime, at it.
package main
