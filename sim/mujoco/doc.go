// Package mujoco is a thin cgo binding to MuJoCo 2.2.2 (Debian's libmujoco-dev).
//
// It owns the C lifetime of one compiled model and its simulation data (a World): loading from
// an MJCF/URDF file or from XML bytes, stepping, zero-copy views of the state arrays
// (qpos, qvel, ctrl, qfrc_applied, sensordata, body and site poses), contacts, ray casts and
// model sizes. All MuJoCo memory is allocated and freed in C; nothing large lives on the Go
// stack (MuJoCo's mjVFS alone is 2 MB).
//
// MuJoCo's fatal errors (mju_error) are caught with setjmp/longjmp inside C and returned as Go
// errors carrying MuJoCo's message; the library never exits or prints on our behalf.
//
// Concurrency: a World is NOT safe for concurrent use. Give each goroutine its own World; two
// Worlds may step on two goroutines at once. Loading is serialised inside this package because
// MuJoCo's XML loader keeps global state.
package mujoco
