// Package sim owns the simulated Solo12: the MJCF model generated from the robot's published
// numbers (primitive collision geoms, no meshes), placed in a worlds.Layout; the motor cards'
// PD+ current loop in motor space; the sensors a real robot gives (motor encoders and currents,
// the master board's IMU, an 11x11 terrain height map and a mocap pose stream), with seeded
// noise; and ground truth for data collection.
//
// A Robot advances in 1 ms control periods, Robot.Step taking one motor-space command per motor
// exactly as the master board hands it to the motor drivers, so a board-side plant can wrap it.
// A Robot owns one MuJoCo world and is not safe for concurrent use: one Robot per goroutine.
package sim
