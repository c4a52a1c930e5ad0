// Package driver owns time and IO around the runtime's IO-free core: the loops that feed it
// sensor packets, perception and slider-box state, and send its commands.
//
//   - Lockstep steps the core once per simulated millisecond against an in-process board (the
//     emulated firmware in front of a simulator): deterministic and as fast as the machine
//     allows, for tests, scenario scripts and evaluation, or paced to the wall clock by
//     runtime/app for fleets of simulated robots. The driver owns the clock, so tests can drop
//     frames in either direction to script link blackouts.
//   - RealTime runs on a real master-board link through the host session: the board's 1 kHz
//     sensor packets pace the loop, a deadline watchdog on a locked OS thread counts overruns,
//     and the loop keeps ticking the core through silence so that the link timeout fires. With
//     the link's kernel receive stamps it tells the periods the board missed (late on arrival)
//     from its own (on time, left waiting in the socket); its thread can be pinned to a CPU.
//
// Both fill the same core.Input and hand every core.Output to an optional observer (flight
// recorder, metrics) that must not block.
package driver
