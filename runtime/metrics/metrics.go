package metrics

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace and subsystem of every runtime series: dualforce_runtime_*.
const (
	Namespace = "dualforce"
	Subsystem = "runtime"
)

// UnknownLabel is the label value that counts a fault reason or mode index New was not told
// about, so that a bad index from the core is visible instead of lost or fatal.
const UnknownLabel = "unknown"

// Bucket upper bounds, in seconds.
var (
	// LoopPeriodBuckets resolve lateness around the 1 ms link period.
	LoopPeriodBuckets = []float64{0.0009, 0.00095, 0.00099, 0.000999, 0.001001, 0.00101, 0.00105, 0.0011, 0.0015, 0.002, 0.005, 0.02}
	// RoundTripBuckets span a direct cable (about 0.2 ms) to a link about to time out.
	RoundTripBuckets = prometheus.ExponentialBuckets(25e-6, 2, 11) // 25 us .. 25.6 ms
	// InferenceBuckets span a small MLP (tens of us) to a policy too slow for 50 Hz.
	InferenceBuckets = prometheus.ExponentialBuckets(5e-6, 2, 13) // 5 us .. 20.5 ms
)

// Options name the label values New creates series for.
type Options struct {
	// Modes are the runtime's modes, indexed as SetMode's argument (e.g. stand, run, damp, stop).
	Modes []string
	// FaultReasons are the supervisor's fault reasons, indexed as IncFault's argument.
	FaultReasons []string
}

// Metrics holds every series of the runtime. Its Observe*, Inc*, Add* and Set* methods are for
// the control thread: they allocate nothing and never block.
type Metrics struct {
	registry *prometheus.Registry

	loopPeriod  prometheus.Histogram
	overruns    prometheus.Counter
	sensorLost  prometheus.Counter
	commandLost prometheus.Counter
	roundTrip   prometheus.Histogram
	inference   prometheus.Histogram
	faults      []prometheus.Counter // by reason index, unknown last
	modes       []prometheus.Gauge   // by mode index, unknown last
	mode        atomic.Int64         // index into modes of the one set to 1
	skill       prometheus.Gauge
}

// New creates the registry and every series.
func New(opts Options) (*Metrics, error) {
	if err := checkLabels("mode", opts.Modes); err != nil {
		return nil, err
	}
	if err := checkLabels("fault reason", opts.FaultReasons); err != nil {
		return nil, err
	}
	name := func(n, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: Namespace, Subsystem: Subsystem, Name: n, Help: help}
	}
	histogram := func(n, help string, buckets []float64) prometheus.Histogram {
		o := name(n, help)
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help, Buckets: buckets})
	}
	lost := prometheus.NewCounterVec(prometheus.CounterOpts(name("link_lost_packets_total",
		"Packets lost on the master-board link: direction=sensor counts ticks without a sensor packet, direction=command the commands the board reports missing.")),
		[]string{"direction"})
	faults := prometheus.NewCounterVec(prometheus.CounterOpts(name("faults_total", "Faults latched by the safety supervisor, by reason.")), []string{"reason"})
	modes := prometheus.NewGaugeVec(prometheus.GaugeOpts(name("mode", "1 for the runtime's current mode, 0 for the others.")), []string{"mode"})
	m := &Metrics{
		registry:    prometheus.NewRegistry(),
		loopPeriod:  histogram("loop_period_seconds", "Time between the starts of consecutive control ticks.", LoopPeriodBuckets),
		overruns:    prometheus.NewCounter(prometheus.CounterOpts(name("loop_overruns_total", "Control ticks that did not finish within their period."))),
		sensorLost:  lost.WithLabelValues("sensor"),
		commandLost: lost.WithLabelValues("command"),
		roundTrip:   histogram("link_round_trip_seconds", "From sending a command to the sensor packet acknowledging its index.", RoundTripBuckets),
		inference:   histogram("policy_inference_seconds", "Time of one policy evaluation.", InferenceBuckets),
		skill:       prometheus.NewGauge(prometheus.GaugeOpts(name("skill", "Index of the active skill in the bank; -1 when none."))),
	}
	for _, r := range append(slices.Clone(opts.FaultReasons), UnknownLabel) {
		m.faults = append(m.faults, faults.WithLabelValues(r))
	}
	for _, md := range append(slices.Clone(opts.Modes), UnknownLabel) {
		m.modes = append(m.modes, modes.WithLabelValues(md))
	}
	m.mode.Store(int64(len(m.modes) - 1))
	m.modes[len(m.modes)-1].Set(1)
	m.skill.Set(-1)
	err := errors.Join(
		m.registry.Register(collectors.NewGoCollector()),
		m.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		m.registry.Register(m.loopPeriod),
		m.registry.Register(m.overruns),
		m.registry.Register(lost),
		m.registry.Register(m.roundTrip),
		m.registry.Register(m.inference),
		m.registry.Register(faults),
		m.registry.Register(modes),
		m.registry.Register(m.skill),
	)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

func checkLabels(what string, values []string) error {
	seen := map[string]bool{UnknownLabel: true}
	for _, v := range values {
		if v == "" || seen[v] {
			return fmt.Errorf("metrics: %s %q is empty, repeated or reserved", what, v)
		}
		seen[v] = true
	}
	return nil
}

// Registry is the registry the series live in, for tests and for adding the series of other
// components (recorder drops, MQTT queue drops) at start-up.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// ObserveLoopPeriod records the time between the starts of two consecutive ticks.
func (m *Metrics) ObserveLoopPeriod(d time.Duration) { m.loopPeriod.Observe(d.Seconds()) }

// IncOverruns counts a tick that missed its deadline.
func (m *Metrics) IncOverruns() { m.overruns.Inc() }

// AddSensorPacketsLost counts ticks that passed without a sensor packet.
func (m *Metrics) AddSensorPacketsLost(n uint64) { m.sensorLost.Add(float64(n)) }

// AddCommandPacketsLost counts commands the board reports it did not receive (the increase of
// its packet_loss counter).
func (m *Metrics) AddCommandPacketsLost(n uint64) { m.commandLost.Add(float64(n)) }

// ObserveLinkRoundTrip records one command-to-acknowledging-sensor-packet latency.
func (m *Metrics) ObserveLinkRoundTrip(d time.Duration) { m.roundTrip.Observe(d.Seconds()) }

// ObserveInference records the time of one policy evaluation.
func (m *Metrics) ObserveInference(d time.Duration) { m.inference.Observe(d.Seconds()) }

// IncFault counts a fault of reason Options.FaultReasons[reason]; other indexes count as
// UnknownLabel.
func (m *Metrics) IncFault(reason int) { m.faults[clampIndex(reason, len(m.faults))].Inc() }

// SetMode makes Options.Modes[mode] the current mode; other indexes set UnknownLabel.
func (m *Metrics) SetMode(mode int) {
	next := int64(clampIndex(mode, len(m.modes)))
	if prev := m.mode.Swap(next); prev != next {
		m.modes[prev].Set(0)
		m.modes[next].Set(1)
	}
}

// SetSkill sets the index of the active skill; -1 for none.
func (m *Metrics) SetSkill(index int) { m.skill.Set(float64(index)) }

// clampIndex maps an out-of-range index to the last (unknown) entry.
func clampIndex(i, n int) int {
	if i < 0 || i >= n-1 {
		return n - 1
	}
	return i
}
