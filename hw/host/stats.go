package host

import "time"

// BurstBuckets is the length of the loss-burst histograms: bucket k-1 counts bursts of k
// consecutive losses, the last bucket every longer burst.
const BurstBuckets = 16

func burstBucket(n uint16) int { return min(int(n), BurstBuckets) - 1 }

// Stats summarises a session's link.
type Stats struct {
	SessionID       uint16
	CommandsSent    uint64
	SensorsReceived uint64
	// CommandLoss is the number of our commands the board never received, from its packet_loss.
	CommandLoss uint64
	// SensorLoss is the number of the board's sensor packets we never received: sensor_index gaps
	// within a session (the board restarts the index for each session, a listener's too).
	SensorLoss uint64
	// ForeignSensors counts dropped sensor packets of another session; Malformed counts frames
	// that were not v4 master-board payloads.
	ForeignSensors, Malformed uint64
	// SaturatedCommands counts commands with at least one field clamped to its wire range.
	SaturatedCommands uint64
	// SensorLossBursts and CommandLossBursts histogram consecutive losses (see BurstBuckets). A
	// command burst is the growth of packet_loss between two sensor packets.
	SensorLossBursts, CommandLossBursts [BurstBuckets]uint64
	// Round trip from sending a command to receiving the first sensor packet whose
	// last_cmd_index names it.
	LatencySamples                     uint64
	LatencyP50, LatencyP99, LatencyMax time.Duration
}

// Stats returns the statistics so far, without allocating.
func (s *Session) Stats() Stats {
	c := &s.stats
	return Stats{
		SessionID: c.session, CommandsSent: c.commandsSent, SensorsReceived: c.sensorsReceived,
		CommandLoss: c.commandLoss, SensorLoss: c.sensorLoss, ForeignSensors: c.foreign, Malformed: c.malformed,
		SaturatedCommands: c.saturated, SensorLossBursts: c.sensorBursts, CommandLossBursts: c.commandBursts,
		LatencySamples: c.latency.Count(), LatencyP50: c.latency.Quantile(0.5), LatencyP99: c.latency.Quantile(0.99),
		LatencyMax: c.latency.Max(),
	}
}
