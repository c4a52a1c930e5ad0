// Package gait owns the scripted Solo12 trot that the dataset behaviours (sim/behave) are built
// on: leg inverse kinematics from the Solo12 geometry, stance feet sweeping back under the hips
// at the commanded base velocity and yaw rate, swing feet that lift first, travel while up and
// land last (so they clear a box edge), Raibert-style touchdown correction, footholds on the
// terrain under each foot when a terrain is given, and stance gravity pre-compensation (tau/Kp)
// so a soft PD does not sag. It is parametrised by forward and lateral velocity, yaw rate, base
// height, step height, gait period and duty factor. With Params.Climb the trot climbs steps in
// the terrain (the navigation box, up to 0.10 m): feet keep the ground they landed on and land
// clear of edges, swings clear the ground ahead, the base rises over the step as far as the
// lowest foot still reaches, and foot targets are clamped into reach (ClampReach).
//
// The trot produces joint position targets once per call; a caller acting as a policy calls it
// once per policy period (20 ms) and maps the targets to an action in [-1,1]^12 through the
// contract (skills.ActionMap), so the scripted data and the learned policies share one action
// space. Heading control and velocity feedback live in sim/behave.
package gait
