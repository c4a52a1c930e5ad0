// Package solo12 owns what is specific to the Solo12 quadruped on the hardware side: the joint
// order and the joint<->motor map (motor numbers, polarities, gear, torque constant, calibrated
// position offsets), the joint limits and safety defaults of odri_control_interface, the leg
// forward kinematics and Jacobians, and the index-search calibration as an IO-free step function.
//
// Everything converts between joint SI units (rad, rad/s, Nm, Nm/rad, Nm*s/rad) and the motor-side
// SI units of hw/proto, on fixed-size arrays and without allocating, so it can run on the 1 kHz
// control path.
package solo12
