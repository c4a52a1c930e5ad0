// Package app owns the wiring of the on-robot runtime: it turns a validated config into a running
// controller — the bank loaded and prepared, the master-board link opened and the host session
// connected, the slider box, the perception stream, the MQTT operator interface (embedded broker
// or external), Prometheus metrics and the MCAP flight recorder — around the IO-free core and its
// real-time driver, or, for a simulated robot on few cores, the lockstep driver with an
// in-process board paced to the wall clock. cmd/skillrt is a thin main over it; tests start it
// in-process.
package app
