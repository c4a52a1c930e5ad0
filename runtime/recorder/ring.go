package recorder

import (
	"math/bits"
	"sync/atomic"

	"github.com/dualforce/dualforce/hw/proto"
)

// slot is one queued tick, stored by value so that queuing allocates nothing.
type slot struct {
	index      uint64
	unixNano   int64
	hasSensor  bool
	hasCommand bool
	hasAction  bool
	sensor     [proto.SensorLen]byte
	command    [proto.CommandLen]byte
	action     [ActionLen]float32
	obs        []float32 // a window of the ring's shared backing array
	events     []byte    // likewise
	input      []byte    // likewise
}

// ring is a single-producer single-consumer queue of slots. The producer owns head and the
// slots from tail+len.. onwards; the consumer owns tail and the slots between tail and head.
// Each side publishes its index with one atomic store after touching the slot.
type ring struct {
	slots     []slot
	mask      uint64
	maxObs    int
	maxEvents int

	head atomic.Uint64
	_    [56]byte // keep head and tail on separate cache lines
	tail atomic.Uint64
}

func newRing(ticks, maxObs, maxEvents int) *ring {
	n := 1 << bits.Len(uint(max(ticks, 2)-1)) // next power of two
	r := &ring{slots: make([]slot, n), mask: uint64(n - 1), maxObs: maxObs, maxEvents: maxEvents}
	obs := make([]float32, n*maxObs)
	events := make([]byte, n*maxEvents)
	input := make([]byte, n*MaxInputBytes)
	for i := range r.slots {
		r.slots[i].obs = obs[i*maxObs : i*maxObs : (i+1)*maxObs]
		r.slots[i].events = events[i*maxEvents : i*maxEvents : (i+1)*maxEvents]
		r.slots[i].input = input[i*MaxInputBytes : i*MaxInputBytes : (i+1)*MaxInputBytes]
	}
	return r
}

func (r *ring) capacity() int { return len(r.slots) }

// fits reports whether t can be queued as it is.
func (r *ring) fits(t *Tick) bool {
	return (len(t.Sensor) == 0 || len(t.Sensor) == proto.SensorLen) &&
		(len(t.Command) == 0 || len(t.Command) == proto.CommandLen) &&
		(len(t.Action) == 0 || len(t.Action) == ActionLen) &&
		len(t.Observation) <= r.maxObs && len(t.Events) <= r.maxEvents && len(t.Input) <= MaxInputBytes && t.UnixNano >= 0
}

// push copies t into the next free slot; false when the ring is full. Producer only.
func (r *ring) push(t *Tick) bool {
	h := r.head.Load()
	if h-r.tail.Load() >= uint64(len(r.slots)) {
		return false
	}
	s := &r.slots[h&r.mask]
	s.index, s.unixNano = t.Index, t.UnixNano
	s.hasSensor = copy(s.sensor[:], t.Sensor) > 0
	s.hasCommand = copy(s.command[:], t.Command) > 0
	s.hasAction = copy(s.action[:], t.Action) > 0
	s.obs = append(s.obs[:0], t.Observation...)
	s.events = append(s.events[:0], t.Events...)
	s.input = append(s.input[:0], t.Input...)
	r.head.Store(h + 1)
	return true
}

// peek returns the oldest queued slot, nil when none. Consumer only.
func (r *ring) peek() *slot {
	t := r.tail.Load()
	if t == r.head.Load() {
		return nil
	}
	return &r.slots[t&r.mask]
}

// release hands the slot peek returned back to the producer. Consumer only.
func (r *ring) release() { r.tail.Add(1) }
