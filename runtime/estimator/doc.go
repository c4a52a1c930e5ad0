// Package estimator owns the runtime's belief about the base: attitude and angular velocity from
// the master board's IMU, and base linear velocity from a complementary filter that integrates
// the IMU's acceleration and corrects it with leg odometry from the feet in stance.
//
// It sees only what the robot gives it (joint encoders and torques, the IMU), never simulator
// ground truth, and it never allocates after construction.
package estimator
