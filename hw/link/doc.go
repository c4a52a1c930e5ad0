// Package link owns the transports that move whole master-board Ethernet frames between the
// robot's computer and the board (or a simulated board): raw Ethernet over an AF_PACKET socket,
// a UDP tunnel on loopback for unprivileged runs, and an in-process pipe for lockstep tests. All
// three are a [Conn] with the same semantics: one call moves one frame, reads time out with
// [ErrTimeout], and [ErrClosed] follows Close.
//
// The package also records a Conn's traffic as a classic pcap file that Wireshark and tshark
// open ([NewRecorder]) and replays such a recording as a Conn that checks, byte for byte, that a
// program sends what it sent when recorded ([NewReplay]).
//
// Frame contents are the business of package proto; link only looks at the source MAC (to tell
// directions apart) and never parses payloads. Nothing here allocates per frame after set-up.
package link
