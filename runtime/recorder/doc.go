// Package recorder owns the runtime's flight recorder: every link tick's raw wire payloads and,
// on policy ticks, the observation, action and events, written to rotating MCAP files that
// Foxglove and Python's mcap reader open, and read back in tick order for replay.
//
// # Control side
//
// The control thread calls Record once per tick. Record copies the tick into a preallocated
// single-producer ring and returns at once: it allocates nothing, takes no lock and never waits
// on the disk. When the ring is full the tick is dropped and counted (Stats.Dropped), so a slow
// or stalled disk costs recorded data, never a control period. Exactly one goroutine may call
// Record; ticks must come with increasing Index.
//
// # Writer side
//
// A writer goroutine drains the ring every DrainInterval into the current file
// "<prefix>-<UTC start>-<seq>.mcap.part" and renames it to "... .mcap" once it is complete
// (summary, footer, fsync). It starts a new file when the current one passes MaxFileBytes or
// spans MaxFileDuration of tick time, and deletes the oldest recordings so that at most MaxFiles
// are on disk (a leftover ".part" of a crashed run counts as one). Close drains what is queued
// and finishes the last file. A crash loses at most the chunk in memory (ChunkSize bytes before
// compression, about half a second at 1 kHz with the defaults); the ".part" file still reads up
// to its last complete chunk and then reports ErrTruncated.
//
// # File layout
//
// Chunked MCAP (zstd by default), one message per channel and tick, all messages of a tick
// sharing its log time (Tick.UnixNano) and sequence number (the low 32 bits of Tick.Index):
//
//	topic               message encoding      schema (encoding)                       payload
//	/link/sensor        odri.masterboard.v4   odri.masterboard.v4.Sensor (text)       the 208-byte sensor payload as received
//	/link/command       odri.masterboard.v4   odri.masterboard.v4.Command (text)      the 172-byte command payload as sent
//	/policy/observation json                  dualforce.Observation (jsonschema)      {"tick":N,"values":[...]}
//	/policy/action      json                  dualforce.Action (jsonschema)           {"tick":N,"values":[...12]}
//	/events             json                  dualforce.Event (jsonschema)            {"tick":N,"event":{...}} or {"tick":N,"text":"..."}
//
// The wire channels use a custom message encoding whose schema record carries a plain-text
// description of the byte layout ("text" schema encoding; the layout is hw/proto's and
// spec/masterboard.md's). Foxglove lists them but cannot decode them; it plots the JSON
// channels (e.g. /policy/action.values[3]). Non-finite floats, which JSON cannot carry, are
// written as the strings "NaN", "+Inf" and "-Inf". A metadata record "dualforce.recorder" at
// the start of each file holds the format version, the first tick and the caller's
// Options.Metadata; "dualforce.recorder.summary" at the end holds the tick count and drops.
package recorder
