package corebus

import "sync/atomic"

// Latest hands the most recent value from one writer to one reader through a
// triple buffer: Store and Load never block each other and never allocate,
// and the reader always sees a whole value, never a half-written one.
type Latest[T any] struct {
	bufs [3]T
	// middle holds the index of the buffer between writer and reader, plus
	// latestFresh when the writer has put a value there the reader has not
	// taken yet.
	middle atomic.Uint32
	back   uint32 // owned by the writer
	front  uint32 // owned by the reader
	seen   bool   // owned by the reader: a value has been taken at least once
}

const latestFresh = 4

// NewLatest returns an empty Latest.
func NewLatest[T any]() *Latest[T] {
	l := &Latest[T]{back: 0, front: 2}
	l.middle.Store(1)
	return l
}

// Store publishes *v. Only one goroutine may call Store.
func (l *Latest[T]) Store(v *T) {
	l.bufs[l.back] = *v
	l.back = l.middle.Swap(l.back|latestFresh) &^ latestFresh
}

// Load copies the most recent value into dst and reports whether any value
// was ever stored. Only one goroutine may call Load.
func (l *Latest[T]) Load(dst *T) bool {
	if l.middle.Load()&latestFresh != 0 {
		l.front = l.middle.Swap(l.front) &^ latestFresh
		l.seen = true
	}
	if !l.seen {
		return false
	}
	*dst = l.bufs[l.front]
	return true
}
