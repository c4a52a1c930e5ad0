// Package core owns the on-robot controller: a deterministic, IO-free state machine stepped once
// per 1 kHz link tick. Each Step takes the newest sensor packet, perception, slider box state and
// the driver's timing verdict, drains operator commands at policy ticks, and fills the command
// packet to send plus the events that happened.
//
// Phases: wait until every driver is enabled and ready -> calibration (index search, or offsets
// from the config) -> stand up (a smooth move to the bank's default pose) -> hold -> run the
// selected skill (policy at the bank's rate, target held between policy ticks) -> damping on a
// fault -> stop (damp, then motors off).
//
// Skills change while running in three ways, each blended: the targets move from the old skill's
// to the new one's over Config.Blend, inside the slew limit. An operator selects a skill, or
// recalls one by reward (weights on observation elements: on the bank's features phi the passing
// latent maximising <u, psi_online>; otherwise the bank's FRE encoding, nearest stored latent
// within a distance). And a navigation skill gives way by itself when its route is blocked -- a
// wall in the height map on that side of the line from where the run began to the goal (blocked
// routes are remembered until the next goal or run), or no progress towards the goal (nor
// across the way to it, as when going round a fence) for a while before it first comes within
// the goal radius -- to the clear-route latent
// with the best measured success in the matching fenced world (after a switch there where the
// bank has that, skills.AfterSwitchWorld; else from the start), then the farthest in successor-
// feature space; never under a fault, at most once per cooldown, each switch an event saying what
// was blocked, which latents were weighed and why the chosen one. With no route clear, a route
// that only a stall ruled out (no wall seen on it) is tried again with another of its latents:
// a stall says one skill got nowhere, a wall that nothing gets through. With no candidate at
// all, an EventRouteBlocked once per set of blocked routes, and the skill keeps running; the
// same (SwitchConfig.KeepMeasured) when a wall on the skill's way round meets the skill that
// started the run, measured to reach the goal from the start in the matching fenced world at
// least as often as any candidate after a switch there: a skill that reacts to the fence by
// itself is not taken off it, until a stall says it does not get through after all. What
// evaluation measured per latent reaches the core through the Measured interface, the FRE
// encoder through RewardEncoder (the bank's own by default); a reward is FRE-encoded when its command is offered, in the
// offering goroutine, because an encode takes milliseconds.
//
// The safety supervisor latches like odri_control_interface and more: joint position and velocity
// limits, driver error codes, link timeout, attitude limit, NaN/Inf anywhere, loop overrun budget,
// slider-box E-stop and operator E-stop all put the robot in the damping controller every tick,
// with an event naming the reason, until an explicit reset.
//
// Drivers own time and IO (runtime/driver): the real-time driver on the master-board link and the
// lockstep driver on the in-process simulator step this same core, so evaluation runs the code
// that is deployed. Nothing here allocates after New.
package core
