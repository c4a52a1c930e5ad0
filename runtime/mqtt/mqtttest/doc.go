// Package mqtttest owns the test harness for a real mosquitto broker: a CA
// and server certificate made with crypto/x509, a password file made with
// mosquitto_passwd, runtime/mqtt's documented ACL (testdata/mosquitto.acl),
// set_tcp_nodelay, a TLS listener on a free loopback port that survives a
// kill and restart, and the mosquitto_pub and mosquitto_sub command-line
// clients run over TLS with an account's credentials.
//
// It is built for tests whose process runs real-time, as the runtime's do:
// every process it starts runs under ordinary scheduling (a child would
// inherit SCHED_FIFO), and PrepareRestart lets a timed window restart the
// broker without forking (forking stalls a real-time process's loop).
//
// Tests of runtime/mqtt and of the runtime's wiring (runtime/app) share it.
// It imports nothing of ours, so runtime/mqtt's own in-package tests can
// use it; Account converts to and from mqtt.Credentials.
package mqtttest
