// Package metrics owns the runtime's Prometheus metrics and the HTTP endpoint that serves them:
// control-loop period and overruns, link losses and round-trip latency, policy inference time,
// faults by reason, and the current mode and skill, on a registry of its own (plus the Go and
// process collectors), never the global one.
//
// The control thread updates metrics through methods that allocate nothing and take no lock:
// every series is created at New, and each update is one or two atomic operations on a handle
// created then. Durations are exported in seconds, as Prometheus expects.
//
// Serve runs an http.Server on a listener until its context ends, then shuts it down
// gracefully; scrapes never touch the control thread.
package metrics
