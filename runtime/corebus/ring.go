package corebus

import "sync/atomic"

// Ring is a bounded multi-producer multi-consumer FIFO (Vyukov's sequenced
// array queue). Offer and Poll never block and never allocate; when the ring
// is full Offer drops the item and counts it in Dropped, so a stalled reader
// can never stall a writer.
type Ring[T any] struct {
	slots   []ringSlot[T]
	mask    uint64
	_       [64]byte // keep the producer and consumer cursors on separate cache lines
	head    atomic.Uint64
	_       [64]byte
	tail    atomic.Uint64
	dropped atomic.Uint64
}

type ringSlot[T any] struct {
	seq atomic.Uint64
	val T
}

// NewRing returns a ring holding at least capacity items (rounded up to a
// power of two, minimum 2).
func NewRing[T any](capacity int) *Ring[T] {
	n := 2
	for n < capacity {
		n <<= 1
	}
	r := &Ring[T]{slots: make([]ringSlot[T], n), mask: uint64(n - 1)}
	for i := range r.slots {
		r.slots[i].seq.Store(uint64(i))
	}
	return r
}

// Offer appends v and reports whether there was room.
func (r *Ring[T]) Offer(v T) bool {
	pos := r.head.Load()
	for {
		slot := &r.slots[pos&r.mask]
		seq := slot.seq.Load()
		switch {
		case seq == pos:
			if r.head.CompareAndSwap(pos, pos+1) {
				slot.val = v
				slot.seq.Store(pos + 1)
				return true
			}
			pos = r.head.Load()
		case int64(seq-pos) < 0:
			r.dropped.Add(1)
			return false
		default:
			pos = r.head.Load()
		}
	}
}

// Poll moves the oldest item into dst and reports whether there was one.
func (r *Ring[T]) Poll(dst *T) bool {
	pos := r.tail.Load()
	for {
		slot := &r.slots[pos&r.mask]
		seq := slot.seq.Load()
		switch {
		case seq == pos+1:
			if r.tail.CompareAndSwap(pos, pos+1) {
				*dst = slot.val
				var zero T
				slot.val = zero // let the collector have whatever the item referenced
				slot.seq.Store(pos + r.mask + 1)
				return true
			}
			pos = r.tail.Load()
		case int64(seq-(pos+1)) < 0:
			return false
		default:
			pos = r.tail.Load()
		}
	}
}

// Cap is the number of items the ring holds.
func (r *Ring[T]) Cap() int { return len(r.slots) }

// Dropped counts the items Offer refused because the ring was full.
func (r *Ring[T]) Dropped() uint64 { return r.dropped.Load() }
