// Package robotboard owns the simulated Solo12 behind its master board: a MuJoCo robot
// (package sim) in a world (sim/worlds) as the plant of the firmware's state machine
// (hw/board), so that a program talking master-board frames cannot tell it from the robot; and
// the perception stream (hw/perception) the robot's motion capture and height map would send.
//
// A Robot advances one millisecond of simulated time per board tick. It runs two ways:
//
//   - Lockstep, in-process: the caller owns time. Step hands the board one received payload and
//     ticks it, returning what the board sends; Perceive is a perception.Fill. The runtime's
//     lockstep driver uses these through Board and a perception.Fill, without importing sim.
//     Truth gives evaluation the ground truth the runtime never sees.
//   - Served on a link (Serve): hw/board/server runs the board on a link.Conn, in real time at
//     1 kHz paced by hw/clock, or in lockstep with the host (one tick per received init or
//     command). Every PerceptionPeriod ticks of simulated time the tick thread takes a
//     perception sample and sends it on UDP. After every tick it publishes the board state and
//     the ground truth, which Server.Status reads from any goroutine without locks. Command
//     solo12sim is this mode behind flags. In real time on a busy machine, make the whole
//     process real-time (clock.RealtimeProcess) besides ServeOptions.Priority: otherwise the Go
//     scheduler can make the tick wait for its ordinary-priority threads.
//
// The robot powers on standing in the layout's start pose with its motors off, so it sinks to
// the ground until a host enables them. The encoders count from the power-on angles: a host's
// solo12.Map takes JointOffsets (the power-on joint angles) as its offsets.
package robotboard
