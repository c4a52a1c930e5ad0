// Package worlds owns the simulator's scenario files: the YAML schema of a world (flat ground,
// or an obstacle course with a start pose, a box in the way, a goal behind it and optional
// fences), its strict parser, seeded randomisation into a concrete Layout of axis-aligned
// boxes, the example worlds shipped with the simulator (embedded *.yaml), and top-down PNG
// plots of an episode over a Layout.
//
// Frames: world x forward from the start, y left, z up; all lengths in metres, angles in rad.
package worlds
