// Package corebus owns what passes between the runtime core and its operator
// interface (the MQTT adapter in runtime/mqtt): validated operator commands
// flowing in, and the state snapshot, skill catalogue and events flowing out.
//
// It is pure Go with no IO so the IO-free core can import it. Everything the
// core touches on its control path — Ring.Poll for commands, Ring.Offer for
// events, Latest.Store for the state snapshot — is non-blocking and allocates
// nothing: a full queue drops the newest item and counts it.
package corebus
