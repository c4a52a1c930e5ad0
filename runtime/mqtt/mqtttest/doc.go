// Package mqtttest owns the test harness for a real mosquitto broker: a CA
// and server certificate made with crypto/x509, a password file made with
// mosquitto_passwd, runtime/mqtt's documented ACL (testdata/mosquitto.acl),
// set_tcp_nodelay, a TLS listener on a free loopback port that survives a
// kill and restart, and the mosquitto_pub and mosquitto_sub command-line
// clients run over TLS with an account's credentials.
//
// Tests of runtime/mqtt and of the runtime's wiring (runtime/app) share it.
// It imports nothing of ours, so runtime/mqtt's own in-package tests can
// use it; Account converts to and from mqtt.Credentials.
package mqtttest
