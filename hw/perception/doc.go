// Package perception owns the perception side channel: what a robot's perception stack (motion
// capture plus a terrain height map) sends the on-robot runtime, and how the runtime receives it.
//
// # Datagram
//
// One fixed-size UDP datagram per perception sample, version 1, all fields little-endian:
//
//	off  size  type      field
//	  0     4  [4]byte   magic "DFPM"
//	  4     2  u16       version (1)
//	  6     2  u16       reserved, sent as 0, ignored on receipt
//	  8     8  u64       sequence number, +1 per datagram of one sender
//	 16     8  i64       timestamp, ns on the sender's monotonic clock (the simulator: sim time)
//	 24    24  f64[3]    base position x, y, z in the world frame (m)
//	 48     8  f64       base yaw about world z (rad)
//	 56   484  f32[121]  height map (m), see below
//	540                  total (Size)
//
// Every float must be finite: a sender with no estimate sends nothing rather than NaN.
//
// # Height-map grid
//
// 11 x 11 points (GridRows x GridCols) spaced 0.1 m (GridSpacing), spanning -0.5..+0.5 m
// (GridExtent) in x and y of the yaw-aligned base frame: origin under the base, x along the
// base's heading projected on the ground, y to its left, z up. Point (row r, column c) sits at
// x = -0.5 + 0.1*r (row 0 is the rearmost) and y = -0.5 + 0.1*c (column 0 is the rightmost) and is
// stored at index r*11 + c. Its value is the terrain height there minus the base height (about
// -0.235 m for Solo12 standing on flat ground). This is the grid of skills.HeightMapPoint; hw may
// not import skills, so package sim/robotboard tests that the two agree.
//
// # Receiving
//
// A Receiver reads datagrams on its own goroutine and keeps the newest valid one in two
// alternating slots of atomic words: the control loop copies it out with Latest without locks,
// allocation or ever waiting for the receiving goroutine, and learns its age from the arrival
// time. Out-of-order and duplicate datagrams are dropped,
// gaps in the sequence are counted as lost, and a sender that restarts its sequence is followed.
//
// A lockstep simulation has no socket: it hands the runtime a Fill that writes the current
// sample straight into a Datagram.
package perception
