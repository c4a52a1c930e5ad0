// Package host owns the host side of the master-board link, what the ODRI C SDK does, with a
// reason for every failure: it sends inits until the board acknowledges (giving up after 2.5 s
// with ErrNoAnswer, a *proto.VersionMismatchError, an *OtherSessionError or proto.ErrProtocolV3),
// stamps each command with the session id and the next command_index, accepts only sensor
// packets of its own session (counting and dropping foreign ones), declares ErrSensorTimeout
// after 50 ms without one, and keeps link statistics: commands sent, sensor packets received,
// command loss (the board's packet_loss), sensor loss (gaps in sensor_index), burst histograms of
// consecutive losses, and the command round-trip latency from last_cmd_index.
//
// A listener session sends nothing: it adopts the session id of the sensor packets it sees, so
// a second program can monitor a running robot, and follows each new session (a change of id,
// or the board's acks, which also mark a new session that repeats the old id) with its loss
// accounting started afresh: the board restarts sensor_index and packet_loss for each session.
//
// Per-driver status words are decoded into names (DriverStatus) and driver errors into
// *DriverError values that say what to check. Commands the wire had to saturate (gains above the
// fixed-point range) are logged as warnings, never passed silently.
//
// A Session does IO on a link.Conn but no allocation on its steady-state path (Send, Receive,
// Stats). It is not safe for concurrent use: one control loop owns it.
package host
