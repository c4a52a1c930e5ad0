// Package mqtt owns the runtime's MQTT interface (shared/spec/mqtt.md): the
// adapter between the IO-free runtime core and a broker, the embedded
// broker a lone robot runs, and the operator's side used by command-line
// tools.
//
// Topics live under solo/v1/<robot_id>/ (robot_id matches [a-z0-9-]+):
//
//	cmd/skill, cmd/mode, cmd/estop, cmd/estop/clear,     in, QoS 1, never retained
//	cmd/velocity, cmd/goal, cmd/bank, cmd/heartbeat      (velocity and heartbeat QoS 0)
//	cmd/recall                                           {reward: {element: weight}, max_distance?}
//	<reply_to>                                           out, QoS 1: {id, ok, error?, state?, recall?}
//	state/connection                                     out, retained: "online", will "lost", "offline"
//	state/mode, state/skill, state/bank                  out, retained
//	telemetry/loop, telemetry/robot                      out, QoS 0, 10 Hz, with seq
//	events                                               out, QoS 1
//
// Commands carry {id, issued_at (RFC 3339), expires_in_ms, reply_to?} plus
// their own fields; velocity and heartbeat need only issued_at. A command
// that arrives retained, expired, malformed (not JSON, unknown or missing
// fields), for an unknown skill or out of range (Limits) is rejected with a
// reason, answered on reply_to when it can be read and reported on events,
// and changes nothing. Accepted commands are queued to the core (CommandSink)
// and applied at its next policy tick; the core's outcome becomes the reply.
// A recall's reply names the skill chosen and its score (the bank's features)
// or distance (FRE encoding); a switch the runtime makes by itself carries, on
// events, what was blocked, the candidates weighed and why the chosen one; a
// blocked route with no measured skill to switch to is a route_blocked event
// (the running skill and what blocked it), once per set of blocked routes.
// MQTT 3.1.1 limits what "retained" can mean: a broker clears the retain
// flag when it passes a message on live, so only a stored copy, delivered
// when the robot subscribes, can be recognised and refused.
//
// The core is never held up by the network: it only touches the
// non-blocking, allocation-free queues of package corebus, and the adapter's
// run loop does all publishing. A lost broker is reconnected with backoff,
// each time with a fresh client and a clean session, so no command is ever
// replayed; retained state is republished on every connection.
//
// Security: the embedded broker (StartBroker) listens on 127.0.0.1 unless
// told otherwise, and refuses any other address without a password file
// (mosquitto_passwd format). Credentials come from a file or the
// environment (LoadCredentials), never from command-line flags. With an
// external mosquitto, testdata/mosquitto.acl is the access list to start
// from: robots publish only their own state, telemetry, events and replies,
// operators only commands. Set set_tcp_nodelay true in mosquitto.conf:
// without it mosquitto's Nagle delays push the p99 of command delivery from
// about 0.2 ms to several ms.
package mqtt
